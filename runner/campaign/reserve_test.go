package campaign

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOutputReservation: preflight reserves --output; a second preflight with the same output is
// refused at once naming the first run's directory; after Release the path is free; a reservation
// file whose holder is gone (no lock) blocks nothing; a refused preflight leaves nothing behind.
func TestOutputReservation(t *testing.T) {
	root := configRepo(t)
	cfg := Config{Workload: filepath.Join(root, "workloads/config.json"), Variant: "cpu-true",
		HostID: "ci-host", Output: filepath.Join(root, ".qualification/receipts/run.json"), Vars: []string{"host_label=ci-01"},
		AllowUnpublishedUnsafe: true, Version: "test-1.0", Command: []string{"qualrun"}}
	first, err := Preflight(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Preflight(context.Background(), cfg)
	if !errors.Is(err, ErrPath) || !strings.Contains(err.Error(), "is reserved by another run in progress (run directory "+first.RunDir()+", qualrun pid ") {
		t.Fatalf("second preflight = %v, want refused naming %s", err, first.RunDir())
	}
	other := cfg
	other.Output = filepath.Join(root, ".qualification/receipts/other.json")
	if p, err := Preflight(context.Background(), other); err != nil {
		t.Errorf("another output path: %v", err)
	} else {
		p.Release()
	}
	first.Release()
	first.Release() // idempotent

	// A stale reservation (its qualrun died: the file is there, its lock is gone).
	stale := filepath.Join(root, reservationPath(".qualification/receipts/run.json"))
	if err := os.MkdirAll(filepath.Dir(stale), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(stale, []byte(`{"output":"x","run_dir":"gone","pid":1,"started_at":"x"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	third, err := Preflight(context.Background(), cfg)
	if err != nil {
		t.Fatalf("after a stale reservation: %v", err)
	}
	third.Release()
	if _, err := os.Stat(filepath.Join(root, ".qualification")); !os.IsNotExist(err) {
		t.Errorf("released reservations left .qualification behind: %v", err)
	}

	// A preflight refused after the reservation (a model directory that does not exist is found
	// when artifacts are bound) gives it back.
	bad := cfg
	bad.ModelDir = filepath.Join(root, "no-such-model")
	if _, err := Preflight(context.Background(), bad); !errors.Is(err, ErrArtifact) {
		t.Fatalf("a missing model directory: %v, want ErrArtifact", err)
	}
	if p, err := Preflight(context.Background(), cfg); err != nil {
		t.Errorf("after a refused preflight: %v", err)
	} else {
		p.Release()
	}
}

// TestOutputReservationRace: preflights started together on one output: exactly one holds it.
func TestOutputReservationRace(t *testing.T) {
	root := configRepo(t)
	cfg := Config{Workload: filepath.Join(root, "workloads/config.json"), Variant: "cpu-true",
		HostID: "ci-host", Output: filepath.Join(root, ".qualification/receipts/run.json"), Vars: []string{"host_label=ci-01"},
		AllowUnpublishedUnsafe: true, Version: "test-1.0", Command: []string{"qualrun"}}
	const n = 6
	type outcome struct {
		p   *Plan
		err error
	}
	out := make(chan outcome, n)
	start := make(chan struct{})
	for i := 0; i < n; i++ {
		go func() {
			<-start
			p, err := Preflight(context.Background(), cfg)
			out <- outcome{p, err}
		}()
	}
	close(start)
	won := 0
	for i := 0; i < n; i++ {
		o := <-out
		p, err := o.p, o.err
		switch {
		case err == nil:
			won++
			defer p.Release()
		case !strings.Contains(err.Error(), "is reserved by another run in progress"):
			t.Errorf("preflight: %v", err)
		}
	}
	if won != 1 {
		t.Fatalf("%d preflights hold the output, want exactly 1", won)
	}
}
