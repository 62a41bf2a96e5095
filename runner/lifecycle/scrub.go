package lifecycle

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/qualkit/qualkit/runner/redact"
	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/rules"
)

// LogDrain bounds how long the end of the server's output may take to reach the log once the
// server is gone (a descendant that still holds the pipe is cut off after it).
const LogDrain = 2 * time.Second

// Secrets are the values that must never enter evidence for a recipe, with the variables that hold
// them: every variable of the server's environment whose value the lifecycle record redacts
// (secret-looking names, the bearer token variable, declared secret_environment names), and the
// bearer token itself (qualrun sends it even when the server does not get it). lookup reads
// qualrun's environment (nil: os.LookupEnv). Unset variables have no value to scrub.
func Secrets(r *contract.LaunchRecipeDoc, lookup func(string) (string, bool)) []redact.Secret {
	if lookup == nil {
		lookup = os.LookupEnv
	}
	vals := map[string]string{}
	for k, v := range r.Environment {
		if r.RedactsEnv(k) {
			vals[k] = v
		}
	}
	for _, k := range r.EnvironmentPassthrough {
		if v, ok := lookup(k); ok && r.RedactsEnv(k) {
			vals[k] = v
		}
	}
	if name := r.TokenEnv(); name != "" {
		if v, ok := lookup(name); ok {
			vals[name] = v
		}
	}
	out := make([]redact.Secret, 0, len(vals))
	for k, v := range vals {
		out = append(out, redact.Secret{Name: k, Value: v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// CheckSecrets refuses a recipe whose secrets are too short to be scrubbed (redact.Check).
func CheckSecrets(secrets []redact.Secret) error {
	var errs []error
	for _, s := range secrets {
		if err := redact.Check(s); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// resolvedShellEval applies the contract's shell rule (schemas.ShellEval) to argv with argv[0]
// replaced by the file prog resolves to: the rule sees names as written, and a program whose
// name hides a shell (bin/start -> /bin/sh) is the same evaluation.
func resolvedShellEval(prog string, argv []string) error {
	real, err := filepath.EvalSymlinks(prog)
	if err != nil {
		return nil // resolution errors are reported where the program is opened
	}
	if rules.ShellEval(argv) != nil {
		return nil // the contract already refuses it
	}
	if e := rules.ShellEval(append([]string{real}, argv[1:]...)); e != nil {
		return fmt.Errorf("%w: command[0] %q resolves to %s; at element %d %q, %s; give the program and its arguments as an argv vector", ErrShellEval, argv[0], real, e.Element, argv[e.Element], e)
	}
	return nil
}

// logScrubber copies the server's output from a pipe into the log, scrubbing secret values.
type logScrubber struct {
	r    *os.File
	w    *redact.Writer
	done chan struct{}
	err  error
}

// logSink returns the file the server's stdout and stderr go to: the log itself when there is
// nothing to scrub, else the write end of a pipe whose reader scrubs into the log. The caller
// closes its copy of a pipe end after the start (closeSink).
func (s *Server) logSink(logf *os.File) (*os.File, error) {
	if s.opts.Redactor.Empty() {
		return logf, nil
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("server log pipe: %w", err)
	}
	sc := &logScrubber{r: pr, w: redact.NewWriter(s.opts.Redactor, logf), done: make(chan struct{})}
	go func() {
		defer close(sc.done)
		_, err := io.Copy(sc.w, pr)
		if cerr := sc.w.Close(); err == nil || errors.Is(err, os.ErrClosed) {
			err = cerr
		}
		sc.err = err
	}()
	s.scrub = sc
	return pw, nil
}

// closeSink closes qualrun's copy of the pipe's write end (the server keeps its own).
func (s *Server) closeSink(sink *os.File) {
	if sink != s.log {
		sink.Close()
	}
}

// drainLog waits up to d for every writer of the server's output to be gone and its bytes to be
// in the log; after that the pipe is closed, so nothing holds the log open. Without scrubbing
// there is nothing to wait for.
func (s *Server) drainLog(d time.Duration) {
	if s.scrub == nil {
		return
	}
	select {
	case <-s.scrub.done:
	case <-time.After(d):
		s.scrub.r.Close()
		<-s.scrub.done
		s.fail(fmt.Sprintf("server log: output still open %s after the server was gone (a descendant holds it); the log was closed", d))
	}
	s.scrub.r.Close()
	if s.scrub.err != nil {
		s.fail("server log: " + s.scrub.err.Error())
	}
}

// waitLog gives the output of an exited leader up to d to reach the log (for a log tail).
func (s *Server) waitLog(d time.Duration) {
	if s.scrub == nil {
		return
	}
	select {
	case <-s.scrub.done:
	case <-time.After(d):
	}
}

// ScrubbedLog counts, by variable, the secret values the server printed that were replaced in
// its log (nil when nothing was replaced).
func (s *Server) ScrubbedLog() map[string]int {
	if s == nil || s.scrub == nil {
		return nil
	}
	m := s.scrub.w.Replaced()
	if len(m) == 0 {
		return nil
	}
	return m
}
