package source

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/qualkit/qualkit/schemas/jsonstrict"
)

// maxTreeDepth bounds directory nesting in a tree walk (git itself refuses deeper paths long before).
const maxTreeDepth = 4096

// treeEntry is one non-directory entry of a tree, with its full slash-separated path.
type treeEntry struct {
	path string
	mode filemode.FileMode
	hash plumbing.Hash
}

// treeHash computes the qualkit-source-tree-v1 hash of a tree:
//
//	sha256( "qualkit-source-tree-v1" NUL
//	        for each file entry, sorted by path bytes:
//	            <mode, 6 octal digits> SP <content id> SP <path> NUL )
//
// where the content id of a blob (regular file, executable, symlink) is "sha256:<hex of sha256 of
// its bytes>" and that of a submodule is "commit:<40 hex>". Directories contribute only through
// the paths of the entries below them. docs/source-identity.md is the specification.
func treeHash(ctx context.Context, r *git.Repository, root string, tree plumbing.Hash) (string, error) {
	var entries []treeEntry
	if err := walkTree(ctx, r, tree, "", 0, &entries); err != nil {
		return "", err
	}
	ids, err := blobDigests(ctx, r, root, entries)
	if err != nil {
		return "", err
	}
	out := make([]jsonstrict.SourceTreeEntry, len(entries))
	for i, e := range entries {
		id := "commit:" + e.hash.String()
		if e.mode != filemode.Submodule {
			id = "sha256:" + ids[e.hash]
		}
		out[i] = jsonstrict.SourceTreeEntry{Path: e.path, Mode: uint32(e.mode), ContentID: id}
	}
	return jsonstrict.SourceTreeHash(out), nil
}

// walkTree appends every non-directory entry below tree. Unlike go-git's TreeWalker, a missing
// subtree is an error, never a silently shorter walk.
func walkTree(ctx context.Context, r *git.Repository, hash plumbing.Hash, prefix string, depth int, out *[]treeEntry) error {
	if depth > maxTreeDepth {
		return fmt.Errorf("tree %s: nesting deeper than %d", prefix, maxTreeDepth)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	t, err := r.TreeObject(hash)
	if err != nil {
		return fmt.Errorf("read tree %s (%q): %w", hash, prefix, err)
	}
	for _, e := range t.Entries {
		p := e.Name
		if prefix != "" {
			p = prefix + "/" + e.Name
		}
		if e.Mode == filemode.Dir {
			if err := walkTree(ctx, r, e.Hash, p, depth+1, out); err != nil {
				return err
			}
			continue
		}
		*out = append(*out, treeEntry{path: p, mode: e.Mode, hash: e.Hash})
	}
	return nil
}

// blobDigests returns the hex sha256 of every distinct blob among entries, keyed by blob id.
// Blobs are read by up to GOMAXPROCS workers, each with its own repository handle (go-git's
// object storage is not safe for concurrent use); inflating loose objects dominates the cost.
func blobDigests(ctx context.Context, r *git.Repository, root string, entries []treeEntry) (map[plumbing.Hash]string, error) {
	var blobs []treeEntry
	seen := make(map[plumbing.Hash]bool, len(entries))
	for _, e := range entries {
		if e.mode != filemode.Submodule && !seen[e.hash] {
			seen[e.hash] = true
			blobs = append(blobs, e)
		}
	}
	workers := min(runtime.GOMAXPROCS(0), (len(blobs)+minBlobsPerWorker-1)/minBlobsPerWorker)
	digests := make([]string, len(blobs))
	errs := make([]error, workers)
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			repo := r
			if w > 0 {
				var err error
				if repo, _, err = open(root); err != nil {
					errs[w] = err
					return
				}
			}
			h := sha256.New()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(blobs) {
					return
				}
				if err := ctx.Err(); err != nil {
					errs[w] = err
					return
				}
				d, err := blobDigest(repo, blobs[i], h)
				if err != nil {
					errs[w] = err
					next.Store(int64(len(blobs))) // stop the others
					return
				}
				digests[i] = d
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	ids := make(map[plumbing.Hash]string, len(blobs))
	for i, b := range blobs {
		ids[b.hash] = digests[i]
	}
	return ids, nil
}

// minBlobsPerWorker keeps small trees on one goroutine.
const minBlobsPerWorker = 64

func blobDigest(r *git.Repository, e treeEntry, h hash.Hash) (string, error) {
	b, err := r.BlobObject(e.hash)
	if err != nil {
		return "", fmt.Errorf("read blob %s (%s): %w", e.hash, e.path, err)
	}
	rd, err := b.Reader()
	if err != nil {
		return "", fmt.Errorf("read blob %s (%s): %w", e.hash, e.path, err)
	}
	defer rd.Close()
	h.Reset()
	if _, err := io.Copy(h, rd); err != nil {
		return "", fmt.Errorf("read blob %s (%s): %w", e.hash, e.path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
