package campaign

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"syscall"

	"github.com/qualkit/qualkit/runner/artifact"
	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/evidence"
)

// rowFiles streams one serving case's request records to its rows/c<C>-r<R>.jsonl files as the
// requests end (load.WithRecordSink), so that the JSONL on disk is valid line by line at every
// moment and an interruption, or qualrun's death, loses no finished request. A file is created
// exclusively at its row's first record; lines are in completion order (each carries its index).
type rowFiles struct {
	r   *run
	dir string

	mu    sync.Mutex
	files map[contract.RowKey]*rowFile
	err   error // the first write error; every later record is dropped
}

type rowFile struct {
	rel    string
	f      *os.File
	closed bool
}

func newRowFiles(r *run, dir string) *rowFiles {
	return &rowFiles{r: r, dir: dir, files: map[contract.RowKey]*rowFile{}}
}

func (w *rowFiles) rel(k contract.RowKey) string {
	return fmt.Sprintf("%s/rows/c%04d-r%03d.jsonl", w.dir, k.Concurrency, k.Repetition)
}

// open creates the row's file exclusively (no symlink component) and binds it as evidence.
func (w *rowFiles) open(k contract.RowKey) (*rowFile, error) {
	if rf, ok := w.files[k]; ok {
		return rf, nil
	}
	rel := w.rel(k)
	root := w.r.p.root
	if err := checkUnder(root, rel); err != nil {
		return nil, err
	}
	path := filepath.Join(root, rel)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", filepath.Dir(rel), err)
	}
	if err := checkUnder(root, rel); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("create request records %s: %w", rel, err)
	}
	rf := &rowFile{rel: rel, f: f}
	w.files[k] = rf
	w.r.evidence = append(w.r.evidence, artifact.File{Kind: contract.ArtifactKindRequestRecords, Path: rel, Abs: path})
	return rf, nil
}

// add writes one record as one line with a single write (load calls it concurrently).
func (w *rowFiles) add(rec *contract.RequestRecordDoc) {
	b, err := json.Marshal(rec)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return
	}
	if err != nil {
		w.err = err
		return
	}
	rf, err := w.open(rec.Row)
	if err == nil && rf.closed {
		err = fmt.Errorf("request records %s: a record arrived after its row ended", rf.rel)
	}
	if err == nil {
		_, err = rf.f.Write(w.r.scrub(append(b, '\n')))
	}
	if err != nil {
		w.err = fmt.Errorf("write request records: %w", err)
	}
}

// finish syncs and closes the row's file (creating it empty for a row without records) and
// returns its reference.
func (w *rowFiles) finish(k contract.RowKey) (contract.FileRef, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return contract.FileRef{}, w.err
	}
	rf, err := w.open(k)
	if err != nil {
		return contract.FileRef{}, err
	}
	if !rf.closed {
		rf.closed = true
		err = rf.f.Sync()
		if cerr := rf.f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return contract.FileRef{}, fmt.Errorf("request records %s: %w", rf.rel, err)
		}
	}
	d, _, err := evidence.DigestFile(filepath.Join(w.r.p.root, rf.rel))
	if err != nil {
		return contract.FileRef{}, fmt.Errorf("request records %s: %w", rf.rel, err)
	}
	return contract.FileRef{Path: rf.rel, Digest: d}, nil
}

// closeAll syncs and closes every file still open (rows the load did not return) and reports
// the first write error.
func (w *rowFiles) closeAll() error {
	w.mu.Lock()
	keys := make([]contract.RowKey, 0, len(w.files))
	for k, rf := range w.files {
		if !rf.closed {
			keys = append(keys, k)
		}
	}
	w.mu.Unlock()
	sort.Slice(keys, func(i, j int) bool {
		return keys[i].Concurrency < keys[j].Concurrency || keys[i].Concurrency == keys[j].Concurrency && keys[i].Repetition < keys[j].Repetition
	})
	for _, k := range keys {
		if _, err := w.finish(k); err != nil {
			return err
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}
