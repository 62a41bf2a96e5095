package campaign

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/qualkit/qualkit/runner/artifact"
	"github.com/qualkit/qualkit/runner/source"
	"github.com/qualkit/qualkit/schemas"
	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/evidence"
	"github.com/qualkit/qualkit/schemas/jsonstrict"
	"github.com/qualkit/qualkit/schemas/metric"
	"github.com/qualkit/qualkit/schemas/rules"
	"golang.org/x/sys/unix"
)

var sourceInspect = source.Inspect

// environment describes the host as provenance: it never selects anything.
func environment(hostID, version string) contract.Environment {
	env := contract.Environment{HostID: hostID, Runtime: map[string]string{"qualrun": version, "go": runtime.Version()}}
	env.OS = contract.OSInfo{Name: "linux", Version: "unknown", Kernel: "unknown", Architecture: runtime.GOARCH}
	if f, err := os.Open("/etc/os-release"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			k, v, _ := strings.Cut(sc.Text(), "=")
			v = strings.Trim(v, `"`)
			switch {
			case k == "NAME" && v != "":
				env.OS.Name = v
			case k == "VERSION_ID" && v != "":
				env.OS.Version = v
			}
		}
		f.Close()
	}
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		env.OS.Kernel = unix.ByteSliceToString(u.Release[:])
	}
	env.Device = contract.Device{Name: cpuModel(), Architecture: runtime.GOARCH, Driver: "none"} // not a contract value: #Environment.device.driver is a free-form name
	if mem := memTotal(); mem > 0 {
		env.Device.MemoryBytes = &mem
	}
	return env
}

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				if v = strings.TrimSpace(v); v != "" {
					return v
				}
			}
		}
	}
	return "cpu" // not a contract value: the device name when /proc/cpuinfo gives none
}

func memTotal() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				kb, _ := strconv.ParseInt(f[0], 10, 64)
				return kb * 1024
			}
		}
	}
	return 0
}

func (r *run) receipt(ctx context.Context) (*contract.ReceiptDoc, error) {
	p := r.p
	evid, err := artifact.Hash(ctx, r.evidence)
	if err != nil {
		return nil, fmt.Errorf("hash evidence: %w", err)
	}
	finished := p.cfg.Now()
	duration := time.Since(p.startedMono)
	step := clockStep(p.started, finished, duration)
	if step != 0 {
		r.notes = append(r.notes, fmt.Sprintf("the host's wall clock was stepped by %+.3f s during the campaign (NTP or an operator): started_at and finished_at are wall-clock readings %.3f s apart, duration_seconds and every timing in the evidence are monotonic", step, finished.Round(0).Sub(p.started.Round(0)).Seconds()))
	}
	verdict := contract.QualificationVerdictPassed
	var passed, failed int64
	for _, res := range r.results {
		if res.Status == contract.StatusPassed {
			passed++
		} else {
			failed++
		}
		if res.Required && res.Status != contract.StatusPassed {
			verdict = contract.QualificationVerdictFailed
		}
	}
	var life *contract.LifecycleRef
	if r.life != nil {
		for _, a := range evid {
			if a.Kind == contract.ArtifactKindLifecycleRecord {
				life = &contract.LifecycleRef{Path: a.Path, Digest: a.Digest, Verdict: contract.LifecycleRefVerdict(r.life.Verdict)}
			}
		}
		if r.life.Verdict == contract.RecordVerdictFailed {
			verdict = contract.QualificationVerdictFailed
			for _, f := range r.life.Failures {
				r.notes = append(r.notes, clipString("lifecycle: "+f, 2048))
			}
		}
	} else if r.srvErr != nil {
		r.notes = append(r.notes, clipString(r.srvErr.Error(), 2048))
	}
	var interruption *contract.Interruption
	if r.interruption != nil {
		verdict, interruption = contract.QualificationVerdictInterrupted, r.interruption
	}
	reasons := append([]string{}, p.reasons...)
	if p.skip != "" {
		reasons = append(reasons, p.skipReason())
	}
	if interruption != nil {
		reasons = append(reasons, fmt.Sprintf("the campaign was interrupted by %s during %s", interruption.Signal, interruption.Phase))
	} else if verdict != contract.QualificationVerdictPassed {
		reasons = append(reasons, "the verdict is failed")
	}
	sat := r.saturationReasons()
	reasons = append(reasons, sat...)
	r.notes = append(r.notes, sat...)
	r.notes = append(r.notes, r.laggingNotes()...)
	publishable := p.publishable && verdict == contract.QualificationVerdictPassed && len(sat) == 0 && p.skip == ""
	if publishable {
		reasons = []string{}
	}
	rc := &contract.ReceiptDoc{
		Schema:      contract.ReceiptSchema,
		ReceiptID:   p.receiptID,
		Source:      p.source.Schema(),
		Artifacts:   append(append([]contract.Artifact{}, p.artifacts...), evid...),
		Environment: environment(p.cfg.HostID, p.cfg.Version),
		Workload: contract.WorkloadRef{ID: p.workload.ID, Path: p.workloadRel, Digest: evidence.DigestOf(p.workloadRaw),
			Variant: p.variant.ID, Variables: p.vars, Seed: p.workload.Determinism.Seed},
		Qualification: contract.Qualification{Kind: p.workload.Kind, Backend: p.variant.Backend, Verdict: verdict, Interruption: interruption,
			StartedAt: p.started.UTC().Format(time.RFC3339Nano), FinishedAt: finished.UTC().Format(time.RFC3339Nano),
			DurationSeconds: duration.Seconds(), WallClockStepSeconds: step, Command: p.cfg.Command,
			Qualrun: contract.BinaryInfo{Version: p.cfg.Version, Digest: p.cfg.BinaryDigest}},
		Results:              r.results,
		Metrics:              metric.MetricsOf(metric.ReceiptCounts(passed, failed, len(r.results))),
		Lifecycle:            life,
		Unsupported:          nonNil(r.unsup),
		Notes:                nonNil(r.notes),
		Publishable:          publishable,
		UnpublishableReasons: reasons,
	}
	p.recordDevices(&rc.Environment)
	if rc.Workload.Variables == nil {
		rc.Workload.Variables = map[string]any{}
	}
	rc.CreatedAt = time.Now().UTC().Format(time.RFC3339Nano)
	b, err := json.MarshalIndent(rc, "", "  ")
	if err != nil {
		return nil, err
	}
	b = append(b, '\n')
	if scrubbed := r.scrub(b); !bytes.Equal(scrubbed, b) {
		// A secret value reached the receipt (given on qualrun's command line, say): the file and
		// the document returned are the scrubbed ones.
		var clean contract.ReceiptDoc
		if err := jsonstrict.DecodeInto(scrubbed, &clean); err != nil {
			return nil, fmt.Errorf("the receipt does not decode once secrets are scrubbed (a secret value collides with its structure); it was not written; evidence is in %s: %w", p.runRel, err)
		}
		b, rc = scrubbed, &clean
	}
	if err := schemas.CheckAs(b, p.outputRel, contract.Receipt); err != nil {
		return nil, fmt.Errorf("the receipt does not validate (a qualkit bug; evidence is in %s): %w", p.runRel, err)
	}
	if err := writeNew(p.root, p.outputRel, b); err != nil {
		return nil, fmt.Errorf("write the receipt %s: %w; this run's evidence is in %s", p.outputRel, err, p.runRel)
	}
	return rc, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// clockStep is how far the wall clock was stepped between start and finish beyond the monotonic
// duration, in seconds, when that is more than the receipt rule's tolerance; 0 otherwise.
func clockStep(start, finish time.Time, duration time.Duration) float64 {
	step := finish.Round(0).Sub(start.Round(0)).Seconds() - duration.Seconds()
	if math.Abs(step) <= rules.MaxDurationSkewSeconds {
		return 0
	}
	return step
}
