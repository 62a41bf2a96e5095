package verify

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/verify/internal/check"
	"github.com/qualkit/qualkit/verify/internal/finding"
)

// TestLifecyclePlausible: lifecycle fields a re-signed record could change on 4822f1d and still
// verify are now recomputed from the record's own offsets or compared with the bound recipe.
func TestLifecyclePlausible(t *testing.T) {
	cases := []struct {
		name   string
		change func(l *contract.LifecycleRecordDoc)
		want   *Reason
		ptr    string
	}{
		{"readiness deadline not the recipe's", func(l *contract.LifecycleRecordDoc) { l.Readiness.DeadlineMs = 200_000 }, ErrLifecycleMismatch, "/readiness/deadline_ms"},
		{"readiness elapsed edited", func(l *contract.LifecycleRecordDoc) { l.Readiness.ElapsedMs += 5 }, ErrLifecycleImplausible, "/readiness/elapsed_ms"},
		{"launch offset edited", func(l *contract.LifecycleRecordDoc) { l.Launch.TStartNs -= 1_000_000 }, ErrLifecycleImplausible, "/readiness/elapsed_ms"},
		{"more probes than fit", func(l *contract.LifecycleRecordDoc) { l.Readiness.Probes = 40 }, ErrLifecycleImplausible, "/readiness/probes"},
		{"readiness path not the recipe's", func(l *contract.LifecycleRecordDoc) { l.Readiness.Path = "/health" }, ErrLifecycleMismatch, "/readiness/path"},
		{"readiness model not the recipe's", func(l *contract.LifecycleRecordDoc) { l.Readiness.ModelID = "other" }, ErrLifecycleMismatch, "/readiness/model_id"},
		{"listener owned by PID 1", func(l *contract.LifecycleRecordDoc) { l.Listener.OwnerPIDs = []int64{1} }, ErrListenerNotOwned, "/listener/owner_pids/0"},
		{"listener owned by a stranger", func(l *contract.LifecycleRecordDoc) { l.Listener.OwnerPIDs = []int64{l.Launch.PID + 1} }, ErrListenerNotOwned, "/listener/owner_pids/0"},
		{"listener owned by a child at shutdown", func(l *contract.LifecycleRecordDoc) {
			l.Listener.OwnerPIDs = []int64{l.Launch.PID + 1}
			l.Shutdown.ProcessesAtSignal = []contract.GroupProcess{{PID: l.Launch.PID, PPID: 1, Comm: "qualsim"}, {PID: l.Launch.PID + 1, PPID: l.Launch.PID, Comm: "worker"}}
		}, nil, ""},
		{"owner listed twice", func(l *contract.LifecycleRecordDoc) {
			l.Listener.OwnerPIDs = append(l.Listener.OwnerPIDs, l.Listener.OwnerPIDs[0])
		}, ErrLifecycleImplausible, "/listener/owner_pids/1"},
		{"residue killed without residue", func(l *contract.LifecycleRecordDoc) { l.Residue.Killed = true }, ErrLifecycleImplausible, "/residue/killed"},
		{"leader not leading its group", func(l *contract.LifecycleRecordDoc) { l.Launch.PGID++ }, ErrLifecycleImplausible, "/launch/pgid"},
		{"shutdown beyond the recipe's deadline", func(l *contract.LifecycleRecordDoc) { l.Shutdown.ElapsedMs = 15_000 }, ErrLifecycleImplausible, "/shutdown/elapsed_ms"},
		{"shutdown before readiness", func(l *contract.LifecycleRecordDoc) { l.Shutdown.TSentNs = *l.Readiness.TReadyNs - 1 }, ErrLifecycleImplausible, "/shutdown/t_sent_ns"},
		{"shutdown wall clock edited", func(l *contract.LifecycleRecordDoc) { l.Shutdown.SentAt = "2026-11-30T15:49:32.008677651Z" }, ErrLifecycleImplausible, "/shutdown/sent_at"},
		{"another port", func(l *contract.LifecycleRecordDoc) { l.Port.Port = 18092 }, ErrLifecycleMismatch, "/port/port"},
		{"another host", func(l *contract.LifecycleRecordDoc) { l.Port.Host = "127.0.0.2" }, ErrLifecycleMismatch, "/port/host"},
		// Closed on 38f126b's mutation survivors: what was launched, compared with the bound recipe.
		{"launch offset nudged by 1 ns", func(l *contract.LifecycleRecordDoc) { l.Launch.TStartNs++ }, ErrLifecycleImplausible, "/readiness/elapsed_ms"},
		{"ready offset nudged by 1 ns", func(l *contract.LifecycleRecordDoc) { *l.Readiness.TReadyNs++ }, ErrLifecycleImplausible, "/readiness/elapsed_ms"},
		{"argv digest not the recipe's command", func(l *contract.LifecycleRecordDoc) { l.Launch.ArgvDigest = "sha256:" + strings.Repeat("0", 64) }, ErrLifecycleMismatch, "/launch/argv_digest"},
		{"recipe id not the bound recipe's", func(l *contract.LifecycleRecordDoc) { l.Recipe.ID = "qualsim-frozen-b" }, ErrLifecycleMismatch, "/recipe/id"},
		{"another working directory", func(l *contract.LifecycleRecordDoc) { l.Launch.WorkingDirectory = "/tmp/fy" }, ErrLifecycleMismatch, "/launch/working_directory"},
		{"executable not argv[0]", func(l *contract.LifecycleRecordDoc) { l.Launch.Executable.Path = "/tmp/fz/bin/other" }, ErrLifecycleMismatch, "/launch/executable/path"},
		{"server log outside the run directory", func(l *contract.LifecycleRecordDoc) { l.Launch.Log.Path = "/tmp/fz/server.log" }, ErrLifecycleMismatch, "/launch/log/path"},
		{"checkout moved with its working directory", func(l *contract.LifecycleRecordDoc) {
			l.Launch.Log.Path = strings.Replace(l.Launch.Log.Path, "/tmp/fz/", "/srv/q/", 1)
			l.Launch.WorkingDirectory, l.Launch.Executable.Path = "/srv/q", "/srv/q/bin/qualsim"
		}, nil, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := frozenSnapshot(t)
			l := s.Lifecycle
			tc.change(l)
			c := &finding.Collector{Check: CheckCleanup}
			check.CleanupRecord(c, "lifecycle.json", l, check.LifecycleContextOf(s))
			if tc.want == nil {
				if len(c.Out) > 0 {
					t.Fatalf("unexpected findings %v", c.Out)
				}
				return
			}
			for _, f := range c.Out {
				if errors.Is(f, tc.want) && f.Pointer == tc.ptr {
					return
				}
			}
			t.Fatalf("no %s at %s in %v", tc.want.Code(), tc.ptr, c.Out)
		})
	}
}

// TestLifecycleDeadlineResealed: the case end to end: the record's readiness deadline
// raised and the evidence re-bound and re-signed with the host key.
func TestLifecycleDeadlineResealed(t *testing.T) {
	const receipt = ".qualification/receipts/a-1.json"
	root := copyTree(t, frozenRoot)
	run := runDirOf(t, root, receipt)
	k := newTestKey(t)
	editJSON(t, filepath.Join(root, run, "lifecycle.json"), func(l map[string]any) {
		l["readiness"].(map[string]any)["deadline_ms"] = 200000
	})
	reseal(t, root, receipt, k)
	res := verifyAt(t, root, receipt, k.policy())
	if !hasFinding(res, CheckCleanup, ErrLifecycleMismatch, "readiness deadline 200000.000 ms") {
		t.Fatalf("not rejected for the deadline:%s", findingsOf(res))
	}
}

// TestLifecycleBindsLaunchResealed: end to end, re-bound and re-signed: a receipt whose server
// binary artifact is dropped, or relabelled to another repository path, and a readiness time after
// the first request was scheduled, are rejected (each verified on 38f126b).
func TestLifecycleBindsLaunchResealed(t *testing.T) {
	const receipt = ".qualification/receipts/a-1.json"
	k := newTestKey(t)
	cases := []struct {
		name string
		edit func(t *testing.T, root, run string)
		want *Reason
		text string
	}{
		{"server binary dropped", func(t *testing.T, root, _ string) {
			editJSON(t, filepath.Join(root, receipt), func(rc map[string]any) {
				var keep []any
				for _, a := range rc["artifacts"].([]any) {
					if a.(map[string]any)["kind"] != "server_binary" {
						keep = append(keep, a)
					}
				}
				rc["artifacts"] = keep
			})
		}, ErrLifecycleMismatch, "binds no server_binary"},
		{"server binary relabelled", func(t *testing.T, root, _ string) {
			editJSON(t, filepath.Join(root, receipt), func(rc map[string]any) {
				for _, a := range rc["artifacts"].([]any) {
					if m := a.(map[string]any); m["kind"] == "server_binary" {
						m["path"] = "bin/qualsin"
					}
				}
			})
		}, ErrLifecycleMismatch, "binds server_binary 0 at bin/qualsin"},
		{"ready after the first request", func(t *testing.T, root, run string) {
			editJSON(t, filepath.Join(root, run, "lifecycle.json"), func(l map[string]any) {
				rd, la := l["readiness"].(map[string]any), l["launch"].(map[string]any)
				tr := int64(190_000_000) // after c0001's warmup was scheduled
				rd["t_ready_ns"] = tr
				start, _ := la["t_start_ns"].(json.Number).Int64()
				rd["elapsed_ms"] = float64(tr-start) / 1e6
			})
		}, ErrLifecycleImplausible, "after request"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := copyTree(t, frozenRoot)
			run := runDirOf(t, root, receipt)
			tc.edit(t, root, run)
			reseal(t, root, receipt, k)
			res := verifyAt(t, root, receipt, k.policy())
			if !hasFinding(res, CheckCleanup, tc.want, tc.text) {
				t.Fatalf("not rejected (%s %q):%s", tc.want.Code(), tc.text, findingsOf(res))
			}
		})
	}
}
