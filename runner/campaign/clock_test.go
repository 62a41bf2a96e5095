package campaign

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestWallClockStepIsDeclared: a step of the host's wall clock during a campaign (the CI host's
// clock once jumped 2.2 s mid-run, and qualrun refused its own receipt as a bug) leaves the
// monotonic duration alone and is declared in the receipt, with a note; forwards and backwards
// (where finished_at falls before started_at). Without a step nothing is declared. The clock is
// injected: the first reading (the start) is the stepped one, wall-clock only.
func TestWallClockStepIsDeclared(t *testing.T) {
	if _, err := os.Stat("/bin/true"); err != nil {
		t.Skip("no true utility")
	}
	for _, tc := range []struct {
		name  string
		shift time.Duration // added to the start's wall reading
		want  float64       // the declared step, 0 for none (sign only checked beyond ±0.5 s)
	}{
		{"forwards", -5 * time.Second, 5},
		{"backwards", 7 * time.Second, -7},
		{"none", 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := configRepo(t)
			var once sync.Once
			now := func() time.Time {
				first := false
				once.Do(func() { first = true })
				if first && tc.shift != 0 {
					return time.Now().Round(0).Add(tc.shift)
				}
				return time.Now()
			}
			p, err := Preflight(context.Background(), Config{Workload: filepath.Join(root, "workloads/config.json"), Variant: "cpu-true",
				HostID: "ci-host", Output: filepath.Join(root, ".qualification/receipts/run.json"), Vars: []string{"host_label=ci-01"},
				AllowUnpublishedUnsafe: true, Command: []string{"qualrun", "run"}, Version: "test-1.0", Now: now,
				BinaryDigest: "sha256:" + strings.Repeat("ab", 32)})
			if err != nil {
				t.Fatal(err)
			}
			out, err := p.Run(context.Background())
			if err != nil {
				t.Fatalf("Run = %v", err) // the receipt did not validate
			}
			q := out.Receipt.Qualification
			if q.DurationSeconds > 4 {
				t.Errorf("duration %.3f s: the step leaked into the monotonic duration", q.DurationSeconds)
			}
			got := q.WallClockStepSeconds
			if tc.want == 0 {
				if got != 0 {
					t.Errorf("a step of %.3f s is declared without one", got)
				}
				return
			}
			if d := got - tc.want; d < -0.5 || d > 0.5 {
				t.Errorf("declared step %.3f s, want about %.0f s", got, tc.want)
			}
			noted := false
			for _, n := range out.Receipt.Notes {
				noted = noted || strings.Contains(n, "wall clock was stepped")
			}
			if !noted {
				t.Errorf("no note names the step: %q", out.Receipt.Notes)
			}
		})
	}
}
