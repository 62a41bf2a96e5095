package campaign

import (
	"bytes"
	"fmt"
	"io"
	"os"

	"github.com/qualkit/qualkit/runner/artifact"
)

// leakChunk is how much of an evidence file tokenLeaks reads at a time.
const leakChunk = 1 << 20

// tokenLeaks lists the evidence files (repository-relative, in order) whose bytes contain token.
// qualrun never writes the token, but the server's log is the server's own output: an engine that
// prints its API key puts it there. Files are streamed, so their size does not matter.
func tokenLeaks(root string, files []artifact.File, token string) ([]string, error) {
	if token == "" {
		return nil, nil
	}
	var leaks []string
	seen := map[string]bool{}
	for _, f := range files {
		if seen[f.Path] {
			continue
		}
		seen[f.Path] = true
		found, err := fileContains(f.Abs, []byte(token))
		if err != nil {
			return leaks, fmt.Errorf("%s: %w", f.Path, err)
		}
		if found {
			leaks = append(leaks, f.Path)
		}
	}
	return leaks, nil
}

// fileContains reports whether the file at path contains needle (a missing file contains
// nothing), reading it in chunks that overlap by len(needle)-1 bytes.
func fileContains(path string, needle []byte) (bool, error) {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	keep := len(needle) - 1
	buf := make([]byte, 0, leakChunk+keep)
	for {
		n, err := io.ReadFull(f, buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if bytes.Contains(buf, needle) {
			return true, nil
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if len(buf) > keep {
			buf = buf[:copy(buf, buf[len(buf)-keep:])]
		}
	}
}
