package qualrun

import (
	"io"
	"sync"

	"github.com/qualkit/qualkit/runner/redact"
)

// scrubWriter passes each write on with the values of the campaign's secrets replaced by their
// markers: qualrun's own output about a run never prints a secret, whatever a server or a
// command made of it. The redactor is set once preflight knows the secrets.
type scrubWriter struct {
	mu sync.Mutex
	w  io.Writer
	r  *redact.Redactor
}

func newScrubWriter(w io.Writer) *scrubWriter { return &scrubWriter{w: w} }

func (s *scrubWriter) set(r *redact.Redactor) {
	s.mu.Lock()
	s.r = r
	s.mu.Unlock()
}

func (s *scrubWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	r := s.r
	s.mu.Unlock()
	if _, err := s.w.Write(r.Bytes(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}
