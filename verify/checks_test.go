package verify

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/qualkit/qualkit/schemas"
	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/evidence"
	"github.com/qualkit/qualkit/schemas/jsonstrict"
	"github.com/qualkit/qualkit/verify/internal/check"
	"github.com/qualkit/qualkit/verify/internal/check/rowcheck"
	"github.com/qualkit/qualkit/verify/internal/finding"
	"github.com/qualkit/qualkit/verify/internal/gitobj"
	"github.com/qualkit/qualkit/verify/internal/load"
)

// Table tests of each check: every check is a pure function of a snapshot, so each case loads the
// frozen a-1 evidence (verifying cleanly), changes one fact, and runs the one check.

var (
	frozenOnce sync.Once
	frozenSnap *load.Snapshot
	frozenErr  error
)

// frozenSnapshot returns a private copy of the loaded frozen a-1 evidence (loaded once: contract
// validation is the slow part, and the checks only read the decoded documents).
func frozenSnapshot(t *testing.T) *load.Snapshot {
	t.Helper()
	frozenOnce.Do(func() {
		var pub crypto.PublicKey
		if pub, frozenErr = LoadPublicKey(filepath.Join(frozenRoot, "frozen.pub")); frozenErr != nil {
			return
		}
		p := DefaultPolicy()
		p.Keys = []crypto.PublicKey{pub}
		var ev Evidence
		if ev, frozenErr = LocateIn(frozenRoot, filepath.Join(frozenRoot, frozenReceipts[0])); frozenErr != nil {
			return
		}
		frozenSnap, frozenErr = load.Load(context.Background(), ev, p, newConfig(nil).loadOptions())
	})
	if frozenErr != nil {
		t.Fatal(frozenErr)
	}
	return cloneSnapshot(t, frozenSnap)
}

// cloneSnapshot copies a snapshot deeply enough for a test to change any fact: the documents are
// decoded again from the files' bytes.
func cloneSnapshot(t *testing.T, src *load.Snapshot) *load.Snapshot {
	t.Helper()
	s := *src
	s.Policy.Keys = slices.Clone(src.Policy.Keys)
	s.Relax = map[Relaxation]bool{}
	dec := func(raw []byte, v any) {
		if err := jsonstrict.DecodeInto(raw, v); err != nil {
			t.Fatal(err)
		}
	}
	rf := *src.Receipt
	s.Receipt = &rf
	s.RC = new(contract.ReceiptDoc)
	dec(rf.Raw, s.RC)
	s.Files = map[string]*load.File{}
	s.CaseResults = map[string]*contract.CaseResultDoc{}
	s.Recipes = map[string]*contract.LaunchRecipeDoc{}
	for p, f := range src.Files {
		c := *f
		if f.Records != nil {
			rs := *f.Records
			c.Records = &rs
		}
		s.Files[p] = &c
	}
	for p := range src.CaseResults {
		cr := new(contract.CaseResultDoc)
		dec(src.Files[p].Raw, cr)
		s.CaseResults[p] = cr
	}
	for p := range src.Recipes {
		r := new(contract.LaunchRecipeDoc)
		dec(src.Files[p].Raw, r)
		s.Recipes[p] = r
	}
	s.DriverResults = map[string]*load.DriverResult{}
	for p := range src.DriverResults {
		dr, err := load.DecodeDriverResult(src.Files[p].Contract, src.Files[p].Raw)
		if err != nil {
			t.Fatal(err)
		}
		s.DriverResults[p] = dr
	}
	s.Lifecycle = new(contract.LifecycleRecordDoc)
	dec(src.Files[src.RC.Lifecycle.Path].Raw, s.Lifecycle)
	s.Workload = new(contract.WorkloadDoc)
	dec(src.Files[src.RC.Workload.Path].Raw, s.Workload)
	s.Attestations = nil
	for _, a := range src.Attestations {
		c := *a
		if a.Stmt != nil {
			st := *a.Stmt
			st.Subjects = slices.Clone(a.Stmt.Subjects)
			c.Stmt = &st
		}
		c.Payload = slices.Clone(a.Payload)
		s.Attestations = append(s.Attestations, &c)
	}
	return &s
}

// checkCase is one row of a check's table: a change, and the reason expected (nil: no finding).
type checkCase struct {
	name   string
	change func(s *load.Snapshot)
	want   *Reason
	status Status // when set, the expected status
}

func runCheckTable(t *testing.T, check func(*load.Snapshot) CheckResult, cases []checkCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := frozenSnapshot(t)
			tc.change(s)
			res := check(s)
			if res.Status == "" && len(res.Findings) == 0 {
				res.Status = StatusPassed
			}
			if tc.status != "" && res.Status != tc.status {
				t.Errorf("status %q, want %q (note %q)", res.Status, tc.status, res.Note)
			}
			if tc.want == nil {
				if len(res.Findings) > 0 {
					t.Fatalf("unexpected findings: %v", res.Findings)
				}
				return
			}
			for _, f := range res.Findings {
				if errors.Is(f, tc.want) {
					if f.Code() != tc.want.Code() || f.Pointer != "" && !strings.HasPrefix(f.Pointer, "/") {
						t.Errorf("finding %v: code %q pointer %q", f, f.Code(), f.Pointer)
					}
					return
				}
			}
			t.Fatalf("no %s finding in %v", tc.want.Code(), res.Findings)
		})
	}
}

func TestCheckSchemas(t *testing.T) {
	runCheckTable(t, check.Schemas, []checkCase{
		{"valid evidence", func(s *load.Snapshot) {}, nil, ""},
		{"receipt not strict JSON", func(s *load.Snapshot) {
			s.Receipt.Violations = []schemas.Violation{{Pointer: "/a", Err: &jsonstrict.DecodeError{Pointer: "/a", Err: jsonstrict.ErrDuplicateKey}}}
		}, ErrInvalidJSON, ""},
		{"case result breaks its schema", func(s *load.Snapshot) {
			f := s.Files[anyPath(s, "case_result")]
			f.Violations = []schemas.Violation{{Pointer: "/status", Err: fmt.Errorf("%w: bad", schemas.ErrSchema)}}
		}, ErrSchemaViolation, ""},
		{"lifecycle breaks a semantic rule", func(s *load.Snapshot) {
			f := s.Files[anyPath(s, "lifecycle_record")]
			f.Violations = []schemas.Violation{{Pointer: "/verdict", Err: fmt.Errorf("%w: passed with residue", schemas.ErrSemantic)}}
		}, ErrSemanticViolation, ""},
		{"historical evidence", func(s *load.Snapshot) {
			f := s.Files[anyPath(s, "case_result")]
			f.Violations = []schemas.Violation{{Pointer: "/containment/service", Err: fmt.Errorf("%w: marker thermal", schemas.ErrHistorical)}}
		}, ErrHistoricalEvidence, ""},
		{"invalid request record line", func(s *load.Snapshot) {
			f := s.Files[anyPath(s, "request_records")]
			f.Records.Invalid = []schemas.Violation{{Pointer: "/2/usage/total_tokens", Err: fmt.Errorf("%w: total", schemas.ErrSemantic)}}
		}, ErrSemanticViolation, ""},
		{"unknown contract", func(s *load.Snapshot) {
			f := s.Files[anyPath(s, "workload")]
			f.Violations = []schemas.Violation{{Pointer: "/schema", Err: fmt.Errorf("%w: x", schemas.ErrUnknownContract)}}
		}, ErrUnknownContract, ""},
		{"wrong contract for the role", func(s *load.Snapshot) {
			f := s.Files[anyPath(s, "lifecycle_record")]
			f.Violations = []schemas.Violation{{Pointer: "/schema", Err: fmt.Errorf("%w: a receipt", ErrWrongContract)}}
		}, ErrWrongContract, ""},
	})
}

// anyPath returns the path of the first artifact of a kind.
func anyPath(s *load.Snapshot, kind string) string {
	for _, a := range s.RC.Artifacts {
		if string(a.Kind) == kind {
			return a.Path
		}
	}
	panic("no artifact of kind " + kind)
}

func TestCheckSource(t *testing.T) {
	commit := func(s *load.Snapshot) string { return s.RC.Source.Commit }
	runCheckTable(t, check.Source, []checkCase{
		{"publishable, no checkout", func(s *load.Snapshot) {}, nil, StatusPassed},
		{"checkout at the receipt's commit", func(s *load.Snapshot) { s.Checkout = &gitobj.Checkout{Head: commit(s), OriginMain: commit(s)} }, nil, StatusPassed},
		{"checkout's origin/main moved on", func(s *load.Snapshot) {
			s.Checkout = &gitobj.Checkout{Head: commit(s), OriginMain: strings.Repeat("2", 40)}
		}, ErrNotOriginMain, ""},
		{"dirty tree", func(s *load.Snapshot) { s.RC.Source.Clean = false }, ErrDirtySource, ""},
		{"not publishable", func(s *load.Snapshot) {
			s.RC.Publishable = false
			s.RC.UnpublishableReasons = []string{"HEAD is not origin/main"}
		}, ErrUnpublished, ""},
		{"no origin/main", func(s *load.Snapshot) { s.RC.Source.OriginMain = nil }, ErrUnpublished, ""},
		{"HEAD not origin/main", func(s *load.Snapshot) { om := strings.Repeat("3", 40); s.RC.Source.OriginMain = &om }, ErrUnpublished, ""},
		{"unpublished but relaxed", func(s *load.Snapshot) {
			s.RC.Source.OriginMain = nil
			s.Relax = map[Relaxation]bool{RelaxUnpublished: true}
		}, nil, StatusPassed},
		{"unpublished, publication not required", func(s *load.Snapshot) {
			s.RC.Publishable = false
			s.Policy.RequirePublishable = false
		}, nil, StatusPassed},
		{"short commit", func(s *load.Snapshot) { s.RC.Source.Commit = "abc123" }, ErrSourceFormat, ""},
		{"unknown tree hash format", func(s *load.Snapshot) { s.RC.Source.TreeHashFormat = "kiln-source-tree-v1" }, ErrSourceFormat, ""},
	})
}

func TestCheckHashes(t *testing.T) {
	runCheckTable(t, check.Hashes, []checkCase{
		{"every file matches", func(s *load.Snapshot) {}, nil, StatusPassed},
		{"records changed", func(s *load.Snapshot) { s.Files[anyPath(s, "request_records")].Digest = evidence.DigestOf([]byte("x")) }, ErrDigestMismatch, ""},
		{"log grew", func(s *load.Snapshot) { s.Files[anyPath(s, "server_log")].Size++ }, ErrSizeMismatch, ""},
		{"lifecycle record missing", func(s *load.Snapshot) {
			f := s.Files[anyPath(s, "lifecycle_record")]
			f.Present, f.Digest = false, ""
		}, ErrMissingFile, ""},
		{"bound input that is only re-hashed absent: a warning, not a finding", func(s *load.Snapshot) {
			f := s.Files[anyPath(s, "server_binary")]
			f.Present, f.Digest = false, ""
		}, nil, StatusPassed},
		{"bound input the checks read absent: a finding", func(s *load.Snapshot) {
			f := s.Files[anyPath(s, "launch_recipe")]
			f.Present, f.Digest = false, ""
		}, ErrMissingInput, ""},
		{"evidence path is a directory", func(s *load.Snapshot) {
			s.Files[anyPath(s, "case_stdout")].ReadErr = fmt.Errorf("%w: not a regular file", ErrUnreadableFile)
		}, ErrUnreadableFile, ""},
		{"evidence at an absolute path", func(s *load.Snapshot) {
			for i, a := range s.RC.Artifacts {
				if a.Kind == "server_log" {
					s.RC.Artifacts[i].Path = "/var/log/server.log"
					s.Files["/var/log/server.log"] = &load.File{Path: "/var/log/server.log", Kind: "server_log"}
				}
			}
		}, ErrUnreadableFile, ""},
		{"result binds another case result", func(s *load.Snapshot) {
			s.RC.Results[0].CaseResult.Digest = evidence.DigestOf([]byte("other"))
		}, ErrReferenceMismatch, ""},
		{"lifecycle reference not listed", func(s *load.Snapshot) { s.RC.Lifecycle.Path = "elsewhere/lifecycle.json" }, ErrReferenceMismatch, ""},
		{"workload digest differs from its artifact", func(s *load.Snapshot) { s.RC.Workload.Digest = evidence.DigestOf([]byte("w")) }, ErrReferenceMismatch, ""},
		{"subject binds other bytes", func(s *load.Snapshot) {
			s.Attestations[0].Stmt.Subjects[2].Digest = evidence.DigestOf([]byte("y"))
		}, ErrSubjectMismatch, ""},
	})
}

func TestCheckSignature(t *testing.T) {
	runCheckTable(t, check.Signature, []checkCase{
		{"envelope and bundle verify", func(s *load.Snapshot) {}, nil, StatusPassed},
		{"no attestation", func(s *load.Snapshot) { s.Attestations = nil }, ErrUnsigned, ""},
		{"no attestation, allowed unsigned", func(s *load.Snapshot) {
			s.Attestations = nil
			s.Relax = map[Relaxation]bool{RelaxUnsigned: true}
		}, nil, StatusSkipped},
		{"no signature verifies", func(s *load.Snapshot) { s.Attestations[1].Signer = "" }, ErrBadSignature, ""},
		{"malformed bundle", func(s *load.Snapshot) {
			s.Attestations[1] = &load.Attestation{Kind: "bundle", Path: s.Attestations[1].Path, Malformed: load.Malformedf("mediaType")}
		}, ErrMalformedAttestation, ""},
		{"a subject is missing", func(s *load.Snapshot) {
			st := *s.Attestations[0].Stmt
			st.Subjects = st.Subjects[:len(st.Subjects)-1]
			s.Attestations[0].Stmt = &st
		}, ErrStatementMismatch, ""},
		{"receipt is not the first subject", func(s *load.Snapshot) {
			st := *s.Attestations[0].Stmt
			st.Subjects = append([]load.StatementSubject{st.Subjects[1], st.Subjects[0]}, st.Subjects[2:]...)
			s.Attestations[0].Stmt = &st
		}, ErrStatementMismatch, ""},
		{"predicate names another host", func(s *load.Snapshot) {
			pred := map[string]any{}
			for k, v := range s.Attestations[0].Stmt.Predicate {
				pred[k] = v
			}
			pred["host_id"] = "other-host"
			s.Attestations[0].Stmt = &load.Statement{Subjects: s.Attestations[0].Stmt.Subjects, Predicate: pred}
		}, ErrStatementMismatch, ""},
		{"envelope and bundle carry different statements", func(s *load.Snapshot) {
			s.Attestations[1].Payload = append([]byte{' '}, s.Attestations[1].Payload...)
		}, ErrAttestationsDiffer, ""},
	})
}

func TestCleanupRecord(t *testing.T) {
	ok := func() *contract.LifecycleRecordDoc {
		s := frozenSnapshot(t)
		return s.Lifecycle
	}
	code := func(v int64) *int64 { return &v }
	cases := []struct {
		name   string
		change func(l *contract.LifecycleRecordDoc, ctx *check.LifecycleContext)
		want   *Reason
	}{
		{"clean lifecycle", func(*contract.LifecycleRecordDoc, *check.LifecycleContext) {}, nil},
		{"never ready", func(l *contract.LifecycleRecordDoc, _ *check.LifecycleContext) { l.Readiness.Ready = false }, ErrNotReady},
		{"ready after the deadline", func(l *contract.LifecycleRecordDoc, _ *check.LifecycleContext) {
			l.Readiness.ElapsedMs = l.Readiness.DeadlineMs + 1
		}, ErrReadyLate},
		{"ready without a time", func(l *contract.LifecycleRecordDoc, _ *check.LifecycleContext) { l.Readiness.TReadyNs = nil }, ErrLifecycleIncomplete},
		{"port taken before launch", func(l *contract.LifecycleRecordDoc, _ *check.LifecycleContext) { l.Port.FreeBeforeLaunch = false }, ErrPortTaken},
		{"listener not owned", func(l *contract.LifecycleRecordDoc, _ *check.LifecycleContext) { l.Listener.Owned = false }, ErrListenerNotOwned},
		{"owned listener without inode", func(l *contract.LifecycleRecordDoc, _ *check.LifecycleContext) { l.Listener.Inodes = nil }, ErrListenerNotOwned},
		{"forced shutdown", func(l *contract.LifecycleRecordDoc, _ *check.LifecycleContext) { l.Shutdown.Forced = true }, ErrForcedShutdown},
		{"exit not acceptable", func(l *contract.LifecycleRecordDoc, _ *check.LifecycleContext) { l.Shutdown.Acceptable = false }, ErrExitNotAcceptable},
		{"exit code not in the recipe", func(l *contract.LifecycleRecordDoc, ctx *check.LifecycleContext) {
			l.Shutdown.ExitCode = code(143)
			ctx.Recipes = map[string]*contract.LaunchRecipeDoc{l.Recipe.Digest: {AcceptableExitCodes: []int64{0}}}
		}, ErrExitNotAcceptable},
		{"residue process", func(l *contract.LifecycleRecordDoc, _ *check.LifecycleContext) {
			l.Residue.Processes = []contract.ResidueProcess{{PID: 9, Comm: "sleep", Escaped: true}}
		}, ErrResidue},
		{"residue listener", func(l *contract.LifecycleRecordDoc, _ *check.LifecycleContext) {
			l.Residue.Listeners = []contract.ResidueListener{{Port: 18091, Inode: 7}}
		}, ErrResidue},
		{"failed verdict", func(l *contract.LifecycleRecordDoc, _ *check.LifecycleContext) {
			l.Verdict, l.Failures = "failed", []string{"interrupted"}
		}, ErrLifecycleFailed},
		{"no launch identity", func(l *contract.LifecycleRecordDoc, _ *check.LifecycleContext) { l.Launch = nil }, ErrLifecycleIncomplete},
		{"no shutdown", func(l *contract.LifecycleRecordDoc, _ *check.LifecycleContext) { l.Shutdown = nil }, ErrLifecycleIncomplete},
		{"receipt says otherwise", func(_ *contract.LifecycleRecordDoc, ctx *check.LifecycleContext) { ctx.ReceiptVerdict = "failed" }, ErrLifecycleMismatch},
		{"another recipe", func(_ *contract.LifecycleRecordDoc, ctx *check.LifecycleContext) {
			ctx.RecipeDigests = []string{evidence.DigestOf(nil)}
		}, ErrLifecycleMismatch},
		{"another server binary", func(_ *contract.LifecycleRecordDoc, ctx *check.LifecycleContext) {
			ctx.Binaries = []string{evidence.DigestOf(nil)}
		}, ErrLifecycleMismatch},
		{"another log", func(l *contract.LifecycleRecordDoc, _ *check.LifecycleContext) { l.Launch.Log.Bytes++ }, ErrLifecycleMismatch},
	}
	s := frozenSnapshot(t)
	base := check.LifecycleContextOf(s)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := ok()
			ctx := base
			tc.change(l, &ctx)
			c := &finding.Collector{Check: CheckCleanup}
			check.CleanupRecord(c, "lifecycle.json", l, ctx)
			if tc.want == nil {
				if len(c.Out) > 0 {
					t.Fatalf("unexpected findings %v", c.Out)
				}
				return
			}
			for _, f := range c.Out {
				if errors.Is(f, tc.want) {
					return
				}
			}
			t.Fatalf("no %s in %v", tc.want.Code(), c.Out)
		})
	}
}

func TestCheckCleanup(t *testing.T) {
	runCheckTable(t, check.Cleanup, []checkCase{
		{"owned server, clean", func(s *load.Snapshot) {}, nil, StatusPassed},
		{"serving without a lifecycle record", func(s *load.Snapshot) { s.RC.Lifecycle = nil }, ErrNoLifecycle, ""},
		{"command-only campaign", func(s *load.Snapshot) {
			s.RC.Lifecycle = nil
			s.RC.Artifacts = check.ArtifactsOfKind(s.RC, "workload", "case_result")
			for p, cr := range s.CaseResults {
				if len(cr.Rows) > 0 {
					delete(s.CaseResults, p)
				}
			}
		}, nil, StatusSkipped},
		{"lifecycle record unreadable", func(s *load.Snapshot) { s.Lifecycle = nil }, ErrLifecycleIncomplete, ""},
	})
}

func TestCheckTolerances(t *testing.T) {
	runCheckTable(t, check.Tolerances, []checkCase{
		{"every number recomputes", func(s *load.Snapshot) {}, nil, StatusPassed},
		{"failed verdict", func(s *load.Snapshot) { s.RC.Qualification.Verdict = "failed" }, ErrVerdictFailed, ""},
		{"interrupted verdict", func(s *load.Snapshot) {
			s.RC.Qualification.Verdict = "interrupted"
			s.RC.Qualification.Interruption = &contract.Interruption{Signal: "SIGHUP", Phase: "readiness"}
		}, ErrInterrupted, ""},
		{"result summary differs", func(s *load.Snapshot) { s.RC.Results[0].Metrics = s.RC.Results[0].Metrics[1:] }, ErrResultMismatch, ""},
		{"passed result, failed case result", func(s *load.Snapshot) { s.CaseResults[s.RC.Results[0].CaseResult.Path].Status = "failed" }, ErrResultMismatch, ""},
		{"row count differs", func(s *load.Snapshot) { s.CaseResults[s.RC.Results[0].CaseResult.Path].Rows[0].Successes-- }, ErrRowMismatch, ""},
		{"window differs", func(s *load.Snapshot) { s.CaseResults[s.RC.Results[0].CaseResult.Path].Rows[1].WindowSeconds *= 1.01 }, ErrRowMismatch, ""},
		{"degraded flag differs", func(s *load.Snapshot) {
			s.CaseResults[s.RC.Results[0].CaseResult.Path].Rows[0].Fidelity.Degraded = true
		}, ErrRowMismatch, ""},
		{"case headline differs", func(s *load.Snapshot) {
			cr := s.CaseResults[s.RC.Results[0].CaseResult.Path]
			cr.Metrics[3].Value++
		}, ErrMetricMismatch, ""},
		{"tolerance for an unknown metric", func(s *load.Snapshot) {
			cr := s.CaseResults[s.RC.Results[1].CaseResult.Path]
			cr.Tolerances = []contract.Tolerance{{Metric: "kv_hit_rate", AbsoluteTolerance: 0.1}}
		}, ErrUnknownTolerance, ""},
		{"case_pass contradicts the status", func(s *load.Snapshot) {
			cr := s.CaseResults[s.RC.Results[1].CaseResult.Path]
			cr.Metrics[0].Value = 0
			s.RC.Results[1].Metrics = cr.Metrics
		}, ErrDeclaredMetrics, ""},
		{"receipt metric differs", func(s *load.Snapshot) { s.RC.Metrics[0].Value = 7 }, ErrMetricMismatch, ""},
	})
}

func TestCheckMetricList(t *testing.T) {
	n := func(v int64) *int64 { return &v }
	m := func(name string, v float64, samples int64) contract.Metric {
		return contract.Metric{Name: name, Value: v, Unit: "ms", Aggregation: "p50", Direction: contract.DirectionLowerIsBetter, Formula: "ttft.v1", Samples: n(samples)}
	}
	want := []contract.Metric{m("a", 10, 5), m("b", 2, 5)}
	tol := Tolerance{Absolute: 1e-9, Relative: 1e-9}
	cases := []struct {
		name     string
		recorded []contract.Metric
		findings int
	}{
		{"equal", []contract.Metric{m("a", 10, 5), m("b", 2, 5)}, 0},
		{"within tolerance", []contract.Metric{m("a", 10+5e-9, 5), m("b", 2, 5)}, 0},
		{"beyond tolerance", []contract.Metric{m("a", 10.001, 5), m("b", 2, 5)}, 1},
		{"other sample count", []contract.Metric{m("a", 10, 4), m("b", 2, 5)}, 1},
		{"missing", []contract.Metric{m("a", 10, 5)}, 1},
		{"undefined", []contract.Metric{m("a", 10, 5), m("b", 2, 5), m("c", 1, 1)}, 1},
		{"diagnostic left alone", []contract.Metric{m("a", 10, 5), m("b", 2, 5), {Name: "server.x.delta", Value: 3, Diagnostic: true}}, 0},
	}
	for _, tc := range cases {
		c := &finding.Collector{Check: CheckTolerances}
		rowcheck.MetricList(c, "f", "/metrics", tc.recorded, want, tol, nil)
		if len(c.Out) != tc.findings {
			t.Errorf("%s: %d findings %v, want %d", tc.name, len(c.Out), c.Out, tc.findings)
		}
		for _, f := range c.Out {
			if !errors.Is(f, ErrMetricMismatch) {
				t.Errorf("%s: %v is not a metric mismatch", tc.name, f)
			}
		}
	}
}

func TestCheckCommand(t *testing.T) {
	one := int64(1)
	metric := func(name string, v float64) contract.Metric {
		return contract.Metric{Name: name, Value: v, Unit: "x", Aggregation: "exact", Direction: contract.DirectionNone, Formula: "runner." + name + ".v1", Samples: &one}
	}
	runnerCase := &contract.Case{Kind: "command", ID: "c", ExpectedExitCodes: []int64{0, 3},
		ResultProtocol: &contract.ResultProtocol{Producer: "runner", DeclaredMetrics: []string{"case_pass", "exit_code"}}}
	commandCase := &contract.Case{Kind: "command", ID: "c",
		ResultProtocol: &contract.ResultProtocol{Producer: "command", DeclaredMetrics: []string{"hit_rate", "latency"}}}
	cases := []struct {
		name    string
		status  string
		metrics []contract.Metric
		wc      *contract.Case
		want    bool
	}{
		{"runner, passed", "passed", []contract.Metric{metric("case_pass", 1), metric("exit_code", 3), metric("output_assertion_failures", 0)}, runnerCase, false},
		{"runner, failed", "failed", []contract.Metric{metric("case_pass", 0), metric("exit_code", 1), metric("output_assertion_failures", 2)}, runnerCase, false},
		{"case_pass 1 on failure", "failed", []contract.Metric{metric("case_pass", 1), metric("exit_code", 1), metric("output_assertion_failures", 0)}, runnerCase, true},
		{"unexpected exit code", "passed", []contract.Metric{metric("case_pass", 1), metric("exit_code", 2), metric("output_assertion_failures", 0)}, runnerCase, true},
		{"assertion failures in a pass", "passed", []contract.Metric{metric("case_pass", 1), metric("exit_code", 0), metric("output_assertion_failures", 1)}, runnerCase, true},
		{"declared runner metric missing", "passed", []contract.Metric{metric("case_pass", 1), metric("output_assertion_failures", 0)}, runnerCase, true},
		{"a non-runner metric", "passed", []contract.Metric{metric("case_pass", 1), metric("exit_code", 0), metric("latency", 1)}, runnerCase, true},
		{"command, as declared", "passed", []contract.Metric{metric("latency", 1), metric("hit_rate", 0.5)}, commandCase, false},
		{"command, undeclared metric", "passed", []contract.Metric{metric("latency", 1), metric("hit_rate", 0.5), metric("extra", 1)}, commandCase, true},
		{"command, missing metric", "passed", []contract.Metric{metric("latency", 1)}, commandCase, true},
	}
	for _, tc := range cases {
		c := &finding.Collector{Check: CheckTolerances}
		check.Command(c, "f", &contract.CaseResultDoc{CaseID: "c", Status: contract.Status(tc.status), Metrics: tc.metrics}, tc.wc)
		if (len(c.Out) > 0) != tc.want {
			t.Errorf("%s: findings %v, want some: %v", tc.name, c.Out, tc.want)
		}
		for _, f := range c.Out {
			if !errors.Is(f, ErrDeclaredMetrics) {
				t.Errorf("%s: %v", tc.name, f)
			}
		}
	}
}

func TestCheckComparability(t *testing.T) {
	rowMetric := func(s *load.Snapshot, name string) *contract.Metric {
		for _, cr := range s.CaseResults {
			for j := range cr.Rows {
				for k := range cr.Rows[j].Metrics {
					if cr.Rows[j].Metrics[k].Name == name {
						return &cr.Rows[j].Metrics[k]
					}
				}
			}
		}
		panic(name)
	}
	runCheckTable(t, check.Comparability, []checkCase{
		{"like-for-like evidence", func(s *load.Snapshot) {}, nil, StatusPassed},
		{"no workload", func(s *load.Snapshot) { s.Workload = nil }, nil, StatusSkipped},
		{"another workload id", func(s *load.Snapshot) { s.RC.Workload.ID = "other-workload" }, ErrWorkloadMismatch, ""},
		{"another seed", func(s *load.Snapshot) { v := int64(1); s.RC.Workload.Seed = &v }, ErrWorkloadMismatch, ""},
		{"undeclared variant", func(s *load.Snapshot) { s.RC.Workload.Variant = "cpu-z" }, ErrWorkloadMismatch, ""},
		{"a case missing", func(s *load.Snapshot) { s.RC.Results = s.RC.Results[:1] }, ErrWorkloadMismatch, ""},
		{"effective config differs", func(s *load.Snapshot) {
			s.CaseResults[s.RC.Results[0].CaseResult.Path].EffectiveConfig = contract.Config{"server": map[string]any{"token_interval_ms": 9}}
		}, ErrConfigMismatch, ""},
		{"prompt set differs from the corpus", func(s *load.Snapshot) {
			s.CaseResults[s.RC.Results[0].CaseResult.Path].Rows[1].PromptSetSHA256 = evidence.DigestOf([]byte("p"))
		}, ErrCorpusMismatch, ""},
		{"corpus prompt replaced in the workload", func(s *load.Snapshot) {
			s.Workload.Variants[0].Cases[0].Corpus.Prompts[0].Text = "another prompt"
		}, ErrCorpusMismatch, ""},
		{"undeclared row", func(s *load.Snapshot) { s.CaseResults[s.RC.Results[0].CaseResult.Path].Rows[1].Concurrency = 64 }, ErrUnlikeRows, ""},
		{"decode rate labelled as window throughput", func(s *load.Snapshot) {
			rowMetric(s, "output_throughput_window").Formula = "decode_rate.v1"
		}, ErrFormulaMismatch, ""},
		{"metric unit changed", func(s *load.Snapshot) { rowMetric(s, "ttft_ms.p50").Unit = "s" }, ErrFormulaMismatch, ""},
		{"rule expects another formula", func(s *load.Snapshot) {
			s.Workload.ComparisonPolicy.MetricRules[3].Formula = "decode_rate.v1"
		}, ErrFormulaMismatch, ""},
	})
}

func TestMetricDefinitions(t *testing.T) {
	cases := []struct {
		name string
		want rowcheck.Identity
		ok   bool
	}{
		{"ttft_ms.p99", rowcheck.Identity{Unit: "ms", Aggregation: "p99", Direction: contract.DirectionLowerIsBetter, Formula: "ttft.v1"}, true},
		{"decode_rate.p99.9", rowcheck.Identity{Unit: "tokens/s", Aggregation: "p99.9", Direction: contract.DirectionHigherIsBetter, Formula: "decode_rate.v1"}, true},
		{"output_throughput_window", rowcheck.Identity{Unit: "tokens/s", Aggregation: "rate", Direction: contract.DirectionHigherIsBetter, Formula: "output_throughput_window.v1"}, true},
		{"request_failures.timeout", rowcheck.Identity{Unit: "requests", Aggregation: "count", Direction: contract.DirectionLowerIsBetter, Formula: "request_failures_by_class.v1"}, true},
		{"ttft_ms.p42", rowcheck.Identity{}, false},
		{"server.requests.delta", rowcheck.Identity{}, false},
	}
	for _, tc := range cases {
		got, ok := check.RowDefinition(tc.name)
		if ok != tc.ok || got != tc.want {
			t.Errorf("rowDefinition(%s) = %v %v, want %v %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
	for name, want := range map[string]rowcheck.Identity{
		"decode_rate.p50.worst_row":         {Unit: "tokens/s", Aggregation: "min", Direction: contract.DirectionHigherIsBetter, Formula: "decode_rate.v1"},
		"ttft_ms.p99.worst_row":             {Unit: "ms", Aggregation: "max", Direction: contract.DirectionLowerIsBetter, Formula: "ttft.v1"},
		"output_throughput_window.best_row": {Unit: "tokens/s", Aggregation: "max", Direction: contract.DirectionHigherIsBetter, Formula: "output_throughput_window.v1"},
		"request_count":                     {Unit: "count", Aggregation: "count", Direction: contract.DirectionNone, Formula: "campaign.request_count.v1"},
	} {
		if got, ok := check.CaseDefinition(name); !ok || got != want {
			t.Errorf("caseDefinition(%s) = %v %v, want %v", name, got, ok, want)
		}
	}
}

func TestCheckScope(t *testing.T) {
	runCheckTable(t, check.Scope, []checkCase{
		{"cpu on a cpu", func(s *load.Snapshot) {}, nil, StatusPassed},
		{"backend differs from the variant", func(s *load.Snapshot) { s.RC.Qualification.Backend = "cuda" }, ErrScopeBackend, ""},
		{"accelerator without a driver", func(s *load.Snapshot) {
			s.RC.Qualification.Backend = "rocm"
			s.Workload.Variants[0].Backend = "rocm"
		}, ErrScopeDevice, ""},
	})
	s := frozenSnapshot(t)
	s.RC.Environment.HostID = "gpu-07"
	s.RC.Qualification.Backend = "cuda"
	s.RC.Environment.Device = contract.Device{Name: "NVIDIA H200", Architecture: "sm_90", Driver: "cuda 13.0"}
	want := "host gpu-07, backend cuda, device NVIDIA H200 (sm_90, driver cuda 13.0): the result describes this host, backend and device only"
	if got := check.ScopeStatement(s); got != want {
		t.Errorf("scope %q, want %q", got, want)
	}
}

func TestInvalidReceiptSkipsTheRest(t *testing.T) {
	s := frozenSnapshot(t)
	s.RC = nil
	for _, c := range check.Table[1:] {
		if r := c.Run(s); r.Status != StatusSkipped {
			t.Errorf("%s: %s, want skipped", c.Name, r.Status)
		}
	}
}

func TestFindingsCapped(t *testing.T) {
	var fs []Finding
	for i := range MaxFindingsPerCheck + 50 {
		fs = append(fs, Finding{Check: CheckSchemas, File: "f", Pointer: finding.Pointer(i), Err: fmt.Errorf("%w: x", ErrSchemaViolation)})
	}
	got := capFindings(fs)
	if len(got) != MaxFindingsPerCheck || !errors.Is(got[len(got)-1], ErrFindingsTruncated) || !strings.Contains(got[len(got)-1].Error(), "51 more") {
		t.Fatalf("capped to %d, last %v", len(got), got[len(got)-1])
	}
}
