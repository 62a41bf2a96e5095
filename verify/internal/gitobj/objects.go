package gitobj

import (
	"bytes"
	"compress/zlib"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/qualkit/qualkit/schemas/evidence"
	"github.com/qualkit/qualkit/schemas/jsonstrict"
)

// A minimal reader of a git object database (loose objects and version-2 pack indexes with
// their packs, offset and reference deltas), enough to recompute a commit's
// qualkit-source-tree-v1 hash offline without running git. Every object read is checked against
// its SHA-1 name; sizes are bounded before anything is inflated.

// ErrObjectMissing: the object is not in the database (a shallow clone, another repository).
var ErrObjectMissing = errors.New("object not in the repository")

// Bounds of the git object reader.
const (
	maxGitObjectBytes = jsonstrict.MaxDocumentBytes * 16 // one inflated object (a blob of at most 1 GiB)
	maxDeltaDepth     = 4096
	maxTreeEntries    = 1_000_000
	maxPackIndexBytes = 1 << 30
)

type Store struct {
	common *os.File // the common git directory; objects/ is read beneath it
	path   string   // its path, for messages
	packs  []*gitPack
}

type gitPack struct {
	path    string
	names   []byte // n x 20, sorted
	offsets []int64
	f       *os.File
}

// Open opens the object database of the common git directory commonDir. Every file it
// reads (loose objects, pack indexes, packs) is opened beneath commonDir (evidence.OpenBeneath:
// openat2 RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS), regular files only: a symlinked object or pack
// cannot make the verifier read a file outside the git directory.
func Open(commonDir string) (*Store, error) {
	d, err := openDir(commonDir)
	if err != nil {
		return nil, err
	}
	g := &Store{common: d, path: commonDir}
	ents, _ := os.ReadDir(filepath.Join(commonDir, "objects", "pack"))
	var idxs []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".idx") {
			idxs = append(idxs, "objects/pack/"+e.Name())
		}
	}
	sort.Strings(idxs)
	for _, idx := range idxs {
		p, err := g.openPack(idx)
		if err != nil {
			g.Close()
			return nil, err
		}
		g.packs = append(g.packs, p)
	}
	return g, nil
}

func (g *Store) Close() {
	for _, p := range g.packs {
		p.f.Close()
	}
	g.common.Close()
}

// openPack opens the pack index idx (a path below the common directory) and its pack.
func (g *Store) openPack(idx string) (*gitPack, error) {
	idxPath := filepath.Join(g.path, filepath.FromSlash(idx))
	b, err := evidence.ReadBeneath(g.common, idx, maxPackIndexBytes)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", g.path, err)
	}
	if len(b) < 8+256*4 || !bytes.Equal(b[:4], []byte("\xfftOc")) || binary.BigEndian.Uint32(b[4:8]) != 2 {
		return nil, fmt.Errorf("%s (%d bytes): not a version-2 pack index", idxPath, len(b))
	}
	n := int(binary.BigEndian.Uint32(b[8+255*4:]))
	namesAt := 8 + 256*4
	crcAt := namesAt + n*20
	offAt := crcAt + n*4
	bigAt := offAt + n*4
	if n < 0 || bigAt > len(b) {
		return nil, fmt.Errorf("%s (%d bytes): truncated pack index", idxPath, len(b))
	}
	p := &gitPack{path: strings.TrimSuffix(idx, ".idx") + ".pack", names: b[namesAt:crcAt], offsets: make([]int64, n)}
	for i := range n {
		o := binary.BigEndian.Uint32(b[offAt+i*4:])
		if o&0x80000000 == 0 {
			p.offsets[i] = int64(o)
			continue
		}
		j := bigAt + int(o&0x7fffffff)*8
		if j+8 > len(b) {
			return nil, fmt.Errorf("%s (%d bytes): truncated pack index", idxPath, len(b))
		}
		p.offsets[i] = int64(binary.BigEndian.Uint64(b[j:]))
	}
	f, _, err := evidence.OpenBeneath(g.common, p.path, -1)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", g.path, err)
	}
	p.f = f
	return p, nil
}

func (p *gitPack) find(id []byte) (int64, bool) {
	n := len(p.offsets)
	i := sort.Search(n, func(i int) bool { return bytes.Compare(p.names[i*20:i*20+20], id) >= 0 })
	if i < n && bytes.Equal(p.names[i*20:i*20+20], id) {
		return p.offsets[i], true
	}
	return 0, false
}

// read returns an object's type and content, checked against its name.
func (g *Store) read(hexID string) (string, []byte, error) {
	id, err := hex.DecodeString(hexID)
	if err != nil || len(id) != 20 {
		return "", nil, fmt.Errorf("an object name of %d characters is not 40 hex digits", len(hexID))
	}
	typ, data, err := g.readRaw(id, 0)
	if err != nil {
		return "", nil, fmt.Errorf("object %s: %w", hexID, err)
	}
	h := sha1.New()
	fmt.Fprintf(h, "%s %d\x00", typ, len(data))
	h.Write(data)
	if !bytes.Equal(h.Sum(nil), id) {
		return "", nil, fmt.Errorf("object %s: its content hashes to %x (a corrupt object database)", hexID, h.Sum(nil))
	}
	return typ, data, nil
}

func (g *Store) readRaw(id []byte, depth int) (string, []byte, error) {
	hexID := hex.EncodeToString(id)
	f, _, err := evidence.OpenBeneath(g.common, "objects/"+hexID[:2]+"/"+hexID[2:], -1)
	if err == nil {
		defer f.Close()
		return readLoose(f)
	}
	if !errors.Is(err, os.ErrNotExist) {
		return "", nil, err
	}
	for _, p := range g.packs {
		if off, ok := p.find(id); ok {
			return g.readPacked(p, off, depth)
		}
	}
	return "", nil, ErrObjectMissing
}

func readLoose(f *os.File) (string, []byte, error) {
	zr, err := zlib.NewReader(f)
	if err != nil {
		return "", nil, err
	}
	defer zr.Close()
	data, err := io.ReadAll(io.LimitReader(zr, maxGitObjectBytes+64))
	if err != nil {
		return "", nil, err
	}
	nul := bytes.IndexByte(data, 0)
	if nul < 0 {
		return "", nil, errors.New("loose object without a header")
	}
	typ, size, ok := strings.Cut(string(data[:nul]), " ")
	n, err := strconv.Atoi(size)
	if !ok || err != nil || n != len(data)-nul-1 || n > maxGitObjectBytes {
		return "", nil, errors.New("loose object header does not match its content")
	}
	if !knownObjectType(typ) {
		return "", nil, fmt.Errorf("loose object header of %d bytes names no object type (commit, tree, blob, tag)", nul)
	}
	return typ, data[nul+1:], nil
}

var packTypes = map[byte]string{1: "commit", 2: "tree", 3: "blob", 4: "tag"}

func knownObjectType(t string) bool {
	for _, k := range packTypes {
		if t == k {
			return true
		}
	}
	return false
}

func (g *Store) readPacked(p *gitPack, off int64, depth int) (string, []byte, error) {
	if depth > maxDeltaDepth {
		return "", nil, fmt.Errorf("delta chain longer than %d", maxDeltaDepth)
	}
	r := io.NewSectionReader(p.f, off, 1<<62)
	var hdr [1]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return "", nil, err
	}
	kind := (hdr[0] >> 4) & 7
	size := int64(hdr[0] & 15)
	shift := uint(4)
	pos := int64(1)
	for b := hdr[0]; b&0x80 != 0; shift += 7 {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return "", nil, err
		}
		pos++
		b = hdr[0]
		size |= int64(b&0x7f) << shift
		if shift > 56 {
			return "", nil, errors.New("pack object size overflows")
		}
	}
	if size > maxGitObjectBytes {
		return "", nil, fmt.Errorf("pack object of %d bytes, more than %d", size, maxGitObjectBytes)
	}
	var baseType string
	var base []byte
	switch kind {
	case 6: // ofs_delta
		var c [1]byte
		if _, err := io.ReadFull(r, c[:]); err != nil {
			return "", nil, err
		}
		pos++
		neg := int64(c[0] & 0x7f)
		for c[0]&0x80 != 0 {
			if _, err := io.ReadFull(r, c[:]); err != nil {
				return "", nil, err
			}
			pos++
			neg = ((neg + 1) << 7) | int64(c[0]&0x7f)
			if neg > off {
				return "", nil, errors.New("ofs_delta base before the pack")
			}
		}
		if neg <= 0 || neg > off {
			return "", nil, errors.New("ofs_delta base outside the pack")
		}
		var err error
		if baseType, base, err = g.readPacked(p, off-neg, depth+1); err != nil {
			return "", nil, err
		}
	case 7: // ref_delta
		id := make([]byte, 20)
		if _, err := io.ReadFull(r, id); err != nil {
			return "", nil, err
		}
		pos += 20
		var err error
		if baseType, base, err = g.readRaw(id, depth+1); err != nil {
			return "", nil, err
		}
	default:
		if packTypes[kind] == "" {
			return "", nil, fmt.Errorf("pack object type %d", kind)
		}
	}
	zr, err := zlib.NewReader(io.NewSectionReader(p.f, off+pos, 1<<62))
	if err != nil {
		return "", nil, err
	}
	defer zr.Close()
	data, err := io.ReadAll(io.LimitReader(zr, size+1))
	if err != nil {
		return "", nil, err
	}
	if int64(len(data)) != size {
		return "", nil, errors.New("pack object size does not match its content")
	}
	if kind < 6 {
		return packTypes[kind], data, nil
	}
	out, err := applyDelta(base, data)
	return baseType, out, err
}

func deltaVarint(d []byte) (int64, []byte, error) {
	var v int64
	for shift := uint(0); len(d) > 0 && shift < 63; shift += 7 {
		b := d[0]
		d = d[1:]
		v |= int64(b&0x7f) << shift
		if b&0x80 == 0 {
			return v, d, nil
		}
	}
	return 0, nil, errors.New("bad delta size")
}

func applyDelta(base, d []byte) ([]byte, error) {
	srcSize, d, err := deltaVarint(d)
	if err != nil {
		return nil, err
	}
	dstSize, d, err := deltaVarint(d)
	if err != nil {
		return nil, err
	}
	if srcSize != int64(len(base)) || dstSize > maxGitObjectBytes {
		return nil, errors.New("delta does not fit its base")
	}
	out := make([]byte, 0, dstSize)
	for len(d) > 0 {
		op := d[0]
		d = d[1:]
		switch {
		case op&0x80 != 0:
			var off, n int64
			for i := range 4 {
				if op&(1<<i) != 0 {
					if len(d) == 0 {
						return nil, errors.New("truncated delta")
					}
					off |= int64(d[0]) << (8 * i)
					d = d[1:]
				}
			}
			for i := range 3 {
				if op&(0x10<<i) != 0 {
					if len(d) == 0 {
						return nil, errors.New("truncated delta")
					}
					n |= int64(d[0]) << (8 * i)
					d = d[1:]
				}
			}
			if n == 0 {
				n = 0x10000
			}
			if off+n > int64(len(base)) || int64(len(out))+n > dstSize {
				return nil, errors.New("delta copies outside its base")
			}
			out = append(out, base[off:off+n]...)
		case op != 0:
			if int(op) > len(d) || int64(len(out))+int64(op) > dstSize {
				return nil, errors.New("truncated delta")
			}
			out = append(out, d[:op]...)
			d = d[op:]
		default:
			return nil, errors.New("delta opcode 0")
		}
	}
	if int64(len(out)) != dstSize {
		return nil, errors.New("delta result size differs")
	}
	return out, nil
}

// CommitTree returns the tree a commit names.
func (g *Store) CommitTree(commit string) (string, error) {
	typ, data, err := g.read(commit)
	if err != nil {
		return "", err
	}
	if typ != "commit" {
		return "", fmt.Errorf("%s is a %s, not a commit", commit, typ)
	}
	tree, ok := strings.CutPrefix(string(data[:min(len(data), 46)]), "tree ")
	if !ok || len(tree) < 40 || !ObjectName.MatchString(tree[:40]) {
		return "", fmt.Errorf("commit %s names no tree", commit)
	}
	return tree[:40], nil
}

// TreeEntry is one entry of a tree object.
type TreeEntry struct {
	mode uint64
	name string
	id   string // 40 hex
}

// parseGitTree parses a tree object's content: entries "<octal mode> SP <name> NUL <20 bytes>".
func parseGitTree(data []byte) ([]TreeEntry, error) {
	var out []TreeEntry
	for len(data) > 0 {
		sp := bytes.IndexByte(data, ' ')
		nul := bytes.IndexByte(data, 0)
		if sp <= 0 || nul < sp || nul+21 > len(data) {
			return nil, errors.New("malformed entry")
		}
		mode, err := strconv.ParseUint(string(data[:sp]), 8, 32)
		if err != nil {
			return nil, fmt.Errorf("entry %d: the mode (%d bytes) is not an octal number", len(out), sp)
		}
		name := string(data[sp+1 : nul])
		if name == "" || name == "." || name == ".." || strings.Contains(name, "/") {
			return nil, fmt.Errorf("entry %d: a name of %d bytes that is empty, \".\", \"..\" or holds '/'", len(out), len(name))
		}
		out = append(out, TreeEntry{mode: mode, name: name, id: hex.EncodeToString(data[nul+1 : nul+21])})
		data = data[nul+21:]
		if len(out) > maxTreeEntries {
			return nil, fmt.Errorf("more than %d entries", maxTreeEntries)
		}
	}
	return out, nil
}

// SourceTreeHash computes the qualkit-source-tree-v1 hash of a tree (schemas.SourceTreeHash).
func (g *Store) SourceTreeHash(ctx context.Context, tree string) (string, error) {
	var entries []jsonstrict.SourceTreeEntry
	blobs := map[string]string{} // blob id -> content id
	var walk func(id, prefix string, depth int) error
	walk = func(id, prefix string, depth int) error {
		if depth > 4096 {
			return errors.New("tree nesting deeper than 4096")
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		typ, data, err := g.read(id)
		if err != nil {
			return err
		}
		if typ != "tree" {
			return fmt.Errorf("%s (%q) is a %s, not a tree", id, prefix, typ)
		}
		ents, err := parseGitTree(data)
		if err != nil {
			return fmt.Errorf("tree %s: %w", id, err)
		}
		for _, te := range ents {
			mode, child := te.mode, te.id
			p := te.name
			if prefix != "" {
				p = prefix + "/" + te.name
			}
			switch mode {
			case 0o40000:
				if err := walk(child, p, depth+1); err != nil {
					return err
				}
				continue
			case 0o160000:
				entries = append(entries, jsonstrict.SourceTreeEntry{Path: p, Mode: uint32(mode), ContentID: "commit:" + child})
				continue
			}
			cid, ok := blobs[child]
			if !ok {
				typ, blob, err := g.read(child)
				if err != nil {
					return err
				}
				if typ != "blob" {
					return fmt.Errorf("%s (%s) is a %s, not a blob", child, p, typ)
				}
				sum := sha256.Sum256(blob)
				cid = "sha256:" + hex.EncodeToString(sum[:])
				blobs[child] = cid
			}
			entries = append(entries, jsonstrict.SourceTreeEntry{Path: p, Mode: uint32(mode), ContentID: cid})
			if len(entries) > maxTreeEntries {
				return fmt.Errorf("more than %d entries", maxTreeEntries)
			}
		}
		return nil
	}
	if err := walk(tree, "", 0); err != nil {
		return "", err
	}
	return jsonstrict.SourceTreeHash(entries), nil
}

// BlobDigest returns the sha256 digest of the blob at the repository-relative path p in tree
// ("" when the tree has no blob there), walking one tree object per path component.
func (g *Store) BlobDigest(tree, p string) (string, error) { return g.blobDigest(tree, p, false) }

// blobDigest is BlobDigest; regular asks for a regular file (mode 100644 or 100755) at p, so a
// symbolic link's blob there counts as none.
func (g *Store) blobDigest(tree, p string, regular bool) (string, error) {
	parts := strings.Split(p, "/")
	id := tree
	for i, name := range parts {
		typ, data, err := g.read(id)
		if err != nil {
			return "", err
		}
		if typ != "tree" {
			return "", nil // a blob where the path needs a directory: no file there
		}
		ents, err := parseGitTree(data)
		if err != nil {
			return "", fmt.Errorf("tree %s: %w", id, err)
		}
		next := ""
		for _, e := range ents {
			if e.name == name {
				dir := e.mode == 0o40000
				last := i == len(parts)-1
				if last == dir || e.mode == 0o160000 {
					return "", nil // a directory (or a submodule) where the path needs a file
				}
				if last && regular && e.mode != 0o100644 && e.mode != 0o100755 {
					return "", nil // a symbolic link, which a reader of the working tree follows
				}
				next = e.id
				break
			}
		}
		if next == "" {
			return "", nil
		}
		id = next
	}
	typ, blob, err := g.read(id)
	if err != nil {
		return "", err
	}
	if typ != "blob" {
		return "", nil
	}
	sum := sha256.Sum256(blob)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}
