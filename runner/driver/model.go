package driver

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/qualkit/qualkit/runner/artifact"
	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/evidence"
	"github.com/qualkit/qualkit/schemas/jsonstrict"
)

// ModelFileEntry is one file of a model directory listing.
type ModelFileEntry struct {
	Path   string `json:"path"`
	Digest string `json:"digest"`
	Bytes  int64  `json:"bytes"`
}

// ModelDigest binds a model: the sha256 of a model file's bytes, or, for a directory, the sha256
// of the RFC 8785 canonical JSON of its listing, [{"path", "digest", "bytes"}] sorted by path,
// with the files artifact.ModelFiles selects (hidden files skipped, symlinks inside refused).
func ModelDigest(ctx context.Context, path string) (string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	if st.Mode().IsRegular() {
		real, err := filepath.EvalSymlinks(path)
		if err != nil {
			return "", err
		}
		arts, err := artifact.Hash(ctx, []artifact.File{{Kind: contract.ArtifactKindDriverModel, Path: path, Abs: real}})
		if err != nil {
			return "", err
		}
		return arts[0].Digest, nil
	}
	if !st.IsDir() {
		return "", fmt.Errorf("model %s is neither a file nor a directory", path)
	}
	_, listing, err := ModelListing(ctx, path)
	if err != nil {
		return "", err
	}
	return ListingDigest(listing)
}

// ListingDigest is the digest of a model directory listing (see ModelDigest).
func ListingDigest(listing []ModelFileEntry) (string, error) {
	b, err := jsonstrict.Canonical(listing)
	if err != nil {
		return "", err
	}
	return evidence.DigestOf(b), nil
}

// ModelListing hashes every file of a model directory (see ModelDigest).
func ModelListing(ctx context.Context, dir string) ([]artifact.File, []ModelFileEntry, error) {
	files, err := artifact.ModelFiles(dir)
	if err != nil {
		return nil, nil, err
	}
	if len(files) == 0 {
		return nil, nil, fmt.Errorf("model directory %s has no files", dir)
	}
	arts, err := artifact.Hash(ctx, files)
	if err != nil {
		return nil, nil, err
	}
	listing := make([]ModelFileEntry, len(arts))
	for i, a := range arts {
		listing[i] = ModelFileEntry{Path: a.Path, Digest: a.Digest, Bytes: a.Bytes}
	}
	return files, listing, nil
}
