package lifecycle

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func startOptions(t *testing.T) Options {
	return Options{LogPath: filepath.Join(t.TempDir(), "server.log"), RecipeDigest: "sha256:" + strings.Repeat("0", 64)}
}

// Start brings a healthy server into service: launched once before readiness, ready, owned.
func TestStartBringsServerIntoService(t *testing.T) {
	calls := 0
	s, err := Start(context.Background(), recipe(t, "healthy", freePort(t)), startOptions(t), func(srv *Server) {
		calls++
		if srv.record.Readiness != nil && srv.record.Readiness.Ready {
			t.Error("launched was called after readiness")
		}
	})
	if err != nil || s == nil {
		t.Fatalf("Start = %v, %v", s, err)
	}
	rec := s.Shutdown(context.Background())
	assertNothingLeft(t, s, rec)
	if calls != 1 || rec.Verdict != "passed" || !rec.Readiness.Ready || !rec.Listener.Owned {
		t.Fatalf("launched %d times; record %+v", calls, rec)
	}
}

// A server that does not come into service is returned with the error, which its record holds.
func TestStartRecordsTheStartupFailure(t *testing.T) {
	s, err := Start(context.Background(), recipe(t, "exit-early", freePort(t)), startOptions(t), nil)
	if s == nil || !errors.Is(err, ErrExitedEarly) {
		t.Fatalf("Start = %v, %v; want the server and ErrExitedEarly", s, err)
	}
	rec := s.Shutdown(context.Background())
	assertNothingLeft(t, s, rec)
	if rec.Verdict != "failed" || len(rec.Failures) == 0 || rec.Failures[0] != err.Error() {
		t.Fatalf("failures %q, want %q first", rec.Failures, err)
	}
}

// Nothing is launched on a taken port: no server, ErrPortTaken, no launched call.
func TestStartRefusesTakenPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	s, err := Start(context.Background(), recipe(t, "healthy", ln.Addr().(*net.TCPAddr).Port), startOptions(t), func(*Server) { t.Error("launched called") })
	if s != nil || !errors.Is(err, ErrPortTaken) {
		t.Fatalf("Start = %v, %v; want nothing launched and ErrPortTaken", s, err)
	}
}

// When ctx ends during readiness, Start records nothing: the caller names the interruption.
func TestStartLeavesAnInterruptionToTheCaller(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	s, err := Start(ctx, recipe(t, "never-ready", freePort(t)), startOptions(t), func(*Server) {
		time.AfterFunc(200*time.Millisecond, cancel)
	})
	if s == nil || err == nil {
		t.Fatalf("Start = %v, %v; want the server and an error", s, err)
	}
	s.Fail(errors.New("interrupted: test"))
	rec := s.Shutdown(context.Background())
	assertNothingLeft(t, s, rec)
	if len(rec.Failures) == 0 || rec.Failures[0] != "interrupted: test" {
		t.Fatalf("failures %q, want the caller's interruption first", rec.Failures)
	}
	for _, f := range rec.Failures {
		if f == err.Error() {
			t.Errorf("Start recorded %q although ctx ended first", f)
		}
	}
}
