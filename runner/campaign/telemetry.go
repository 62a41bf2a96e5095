package campaign

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/qualkit/qualkit/runner/artifact"
	"github.com/qualkit/qualkit/runner/telemetry"
	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/evidence"
)

// caseTelemetry is a serving case's running device sampler.
type caseTelemetry struct {
	sampler  *telemetry.Sampler
	devices  []int64
	interval int64
	samples  []contract.TelemetrySampleDoc
	warnings []string
}

// startTelemetry starts the device sampler of a serving case that declares one, over every
// device serving the variant's backend that can be sampled. It returns nil when the case
// declares none or nothing can be sampled (a note says why).
func (r *run) startTelemetry(c contract.Case) *caseTelemetry {
	if c.DeviceTelemetry == nil {
		return nil
	}
	p := r.p
	var which []int64
	for i, d := range p.devices.Devices {
		if d.Kind == contract.ProbedDeviceKindGPU && slices.Contains(d.APIFamilies, p.variant.Backend) {
			which = append(which, int64(i))
		}
	}
	if len(which) == 0 {
		r.notes = append(r.notes, clipString(fmt.Sprintf("case %s: device telemetry declared, but no GPU serves backend %s: nothing sampled", c.ID, p.variant.Backend), 2048))
		return nil
	}
	readers, sampled, why := telemetry.Open(p.devices.Devices, which, p.cfg.DeviceFixture)
	for _, w := range why {
		r.notes = append(r.notes, clipString(fmt.Sprintf("case %s: device telemetry: %s", c.ID, w), 2048))
	}
	if len(readers) == 0 {
		return nil
	}
	iv := c.DeviceTelemetry.IntervalMs
	return &caseTelemetry{sampler: telemetry.Start(time.Duration(iv)*time.Millisecond, r.epoch, readers...), devices: sampled, interval: iv}
}

// stop ends the sampler (nil-safe).
func (ct *caseTelemetry) stop() {
	if ct == nil || ct.sampler == nil {
		return
	}
	var dropped int
	ct.samples, dropped = ct.sampler.Stop()
	ct.sampler = nil
	if dropped > 0 {
		ct.warnings = append(ct.warnings, fmt.Sprintf("%d readings dropped past %d samples", dropped, telemetry.MaxSamples))
	}
}

// row writes a row's device telemetry (the samples bracketing its window) beside its request
// records and adds the row's diagnostic device metrics and flags.
func (r *run) telemetryRow(ct *caseTelemetry, recordsRel string, row *contract.Row, recs []contract.RequestRecordDoc) error {
	if ct == nil || ct.samples == nil {
		return nil
	}
	start, end, tokens, ok := telemetry.RowWindow(recs)
	var xs []contract.TelemetrySampleDoc
	warnings := slices.Clone(ct.warnings)
	if ok {
		xs = telemetry.Window(ct.samples, start, end)
	} else {
		warnings = append(warnings, "the row has no measured window: no device metrics")
	}
	var buf bytes.Buffer
	for _, x := range xs {
		b, err := json.Marshal(x)
		if err != nil {
			return err
		}
		buf.Write(b)
		buf.WriteByte('\n')
	}
	rel := strings.TrimSuffix(recordsRel, ".jsonl") + ".telemetry.jsonl"
	if err := writeNew(r.p.root, rel, buf.Bytes()); err != nil {
		return err
	}
	r.evidence = append(r.evidence, artifact.File{Kind: contract.ArtifactKindDeviceTelemetry, Path: rel, Abs: r.abs(rel)})
	flags := []contract.RowDeviceTelemetryFlags{}
	if ok {
		sum := telemetry.Summarize(xs, start, end, tokens)
		row.Metrics = append(row.Metrics, sum.Metrics...)
		flags = append(flags, sum.Flags...)
		warnings = append(warnings, sum.Warnings...)
	}
	for i := range warnings {
		warnings[i] = clipString(warnings[i], 512)
	}
	if len(warnings) > 64 {
		warnings = warnings[:64]
	}
	row.DeviceTelemetry = &contract.RowDeviceTelemetry{Samples: contract.FileRef{Path: rel, Digest: evidence.DigestOf(buf.Bytes())},
		IntervalMs: ct.interval, Devices: ct.devices, Flags: flags, Warnings: nonNil(warnings)}
	return nil
}
