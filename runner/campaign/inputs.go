package campaign

import (
	"fmt"
	"path/filepath"

	"github.com/qualkit/qualkit/runner/load"
	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/evidence"
)

// Limits on the documents qualrun run reads, in one place. Every input is opened without blocking
// (a FIFO is refused, not waited on), must be a regular file (a device such as /dev/zero is
// refused) and is checked against its limit with fstat before a byte is read, so an 8 GiB sparse
// file is refused at once. A refusal wraps schemas.ErrNotRegular or schemas.ErrFileTooLarge.
const (
	// MaxWorkloadBytes bounds a workload file.
	MaxWorkloadBytes = 16 << 20
	// MaxRecipeBytes bounds a launch recipe (also qualrun serve --launch).
	MaxRecipeBytes = 1 << 20
	// MaxRuntimeManifestBytes bounds a runtime manifest (--runtime-manifest).
	MaxRuntimeManifestBytes = 16 << 20
	// MaxCorpusBytes bounds a JSONL corpus file (the load generator's limit).
	MaxCorpusBytes = load.MaxCorpusBytes
)

// readInput reads one bounded input document; what names it for the message ("workload").
func readInput(path, what string, limit int64) ([]byte, error) {
	b, err := evidence.ReadFileLimited(path, limit)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w; give a regular file of at most %d bytes", what, err, limit)
	}
	return b, nil
}

// checkInput refuses an input that is not a regular file within limit (limit < 0: any size),
// without reading it.
func checkInput(path, what string, limit int64) error {
	f, _, err := evidence.OpenRegular(path, limit)
	if err != nil {
		if limit >= 0 {
			return fmt.Errorf("%s: %w; give a regular file of at most %d bytes", what, err, limit)
		}
		return fmt.Errorf("%s: %w; give a regular file", what, err)
	}
	return f.Close()
}

// checkInputs refuses, before the source tree is inspected or anything is hashed, every input the
// campaign names that is not a regular file within its limit: launch recipes, corpus files, the
// runtime manifest and extra config files.
func (p *Plan) checkInputs() error {
	for i, c := range p.variant.Cases {
		if c.Kind != contract.CaseKindServing {
			continue
		}
		if c.Launch != "" {
			if err := checkInput(filepath.Join(p.root, filepath.FromSlash(c.Launch)), fmt.Sprintf("case %s (variants/%s/cases/%d) launch recipe %s", c.ID, p.variant.ID, i, c.Launch), MaxRecipeBytes); err != nil {
				return fmt.Errorf("%w: %w", ErrWorkload, err)
			}
		}
		if c.Corpus != nil && (c.Corpus.Source == contract.CorpusSourceFile || c.Corpus.Source == contract.CorpusSourceTrace) && filepath.IsLocal(filepath.FromSlash(c.Corpus.Path)) {
			if err := checkInput(filepath.Join(p.root, filepath.FromSlash(c.Corpus.Path)), fmt.Sprintf("case %s corpus %s", c.ID, c.Corpus.Path), MaxCorpusBytes); err != nil {
				return fmt.Errorf("%w: %w", ErrWorkload, err)
			}
		}
	}
	if p.cfg.RuntimeManifest != "" {
		if err := checkInput(p.cfg.RuntimeManifest, "--runtime-manifest", MaxRuntimeManifestBytes); err != nil {
			return fmt.Errorf("%w: %w", ErrArtifact, err)
		}
	}
	for _, f := range p.cfg.ConfigFiles {
		if err := checkInput(f, "--config", -1); err != nil {
			return fmt.Errorf("%w: %w", ErrArtifact, err)
		}
	}
	return nil
}
