package campaign

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"sort"

	"github.com/qualkit/qualkit/runner/artifact"
	"github.com/qualkit/qualkit/runner/redact"
	"github.com/qualkit/qualkit/schemas/evidence"
)

// leakChunk is how much of an evidence file secretLeaks reads at a time.
const leakChunk = 1 << 20

// secretLeaks searches every file for every secret value the redactor knows (in each form it
// scrubs) and returns, by variable name, the files (repository-relative, in order) that contain
// it. qualrun scrubs what it writes, but some files are written by others: a command's own case
// result, a driver's output, the server log of a server that escapes the scrubber. Files are
// streamed, so their size does not matter; a missing file contains nothing.
func secretLeaks(files []artifact.File, red *redact.Redactor) (map[string][]string, error) {
	if red.Empty() {
		return nil, nil
	}
	leaks := map[string][]string{}
	seen := map[string]bool{}
	for _, f := range files {
		if seen[f.Path] {
			continue
		}
		seen[f.Path] = true
		names, err := fileSecrets(f.Abs, red)
		if err != nil {
			return leaks, fmt.Errorf("%s: %w", f.Path, err)
		}
		for _, n := range names {
			leaks[n] = append(leaks[n], f.Path)
		}
	}
	return leaks, nil
}

// runFiles lists every regular file under the run directory (beyond those registered as
// evidence: whatever a command or driver wrote there too), repository-relative and sorted.
func (p *Plan) runFiles() []artifact.File {
	var out []artifact.File
	_ = filepath.WalkDir(filepath.Join(p.root, p.runRel), func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(p.root, path)
		if err == nil {
			out = append(out, artifact.File{Path: filepath.ToSlash(rel), Abs: path})
		}
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// fileSecrets lists the secrets whose values occur in the file at path, reading it in chunks that
// overlap by the longest value's length - 1 bytes. Anything but a regular file is refused
// without blocking.
func fileSecrets(path string, red *redact.Redactor) ([]string, error) {
	f, _, err := evidence.OpenRegular(path, -1)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	defer f.Close()
	keep := red.MaxLen() - 1
	buf := make([]byte, 0, leakChunk+keep)
	found := map[string]bool{}
	for {
		n, err := io.ReadFull(f, buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		for _, name := range red.Contains(buf) {
			found[name] = true
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if len(buf) > keep {
			buf = buf[:copy(buf, buf[len(buf)-keep:])]
		}
	}
	names := make([]string, 0, len(found))
	for n := range found {
		names = append(names, n)
	}
	sort.Strings(names)
	return names, nil
}

// leakProblems searches every file the run wrote (the registered evidence and anything else under
// the run directory) for every secret value; each variable found is one problem naming the files,
// never the value.
func (r *run) leakProblems() []string {
	red := r.p.Redactor()
	if red.Empty() {
		return nil
	}
	files := append(append([]artifact.File{}, r.evidence...), r.p.runFiles()...)
	leaks, err := secretLeaks(files, red)
	var problems []string
	if err != nil {
		problems = append(problems, "secret search: "+err.Error())
	}
	names := make([]string, 0, len(leaks))
	for n := range leaks {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		what := "the value of " + n
		if n == r.p.recipe.TokenEnv() {
			what = "the bearer token from " + n
		}
		problems = append(problems, fmt.Sprintf("%s appears in %s: do not publish this run's evidence (qualrun scrubs what it writes; these files were written by a command, a driver or the server)", what, summarize(leaks[n], 8)))
	}
	return problems
}

// scrubbedNotes say, per variable, how many of its values the server printed into file and were
// replaced there by their marker.
func scrubbedNotes(file string, counts map[string]int) []string {
	names := make([]string, 0, len(counts))
	for n := range counts {
		names = append(names, n)
	}
	sort.Strings(names)
	var notes []string
	for _, n := range names {
		notes = append(notes, fmt.Sprintf("%s: the server printed the value of %s %d time(s); qualrun replaced it with %s as the log was captured", file, n, counts[n], redact.Marker(n)))
	}
	return notes
}
