package load

import (
	"bytes"
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/metric"
)

// TestRunKeepsScrapes: each row keeps its two /metrics pages as scrubbed by Plan.ScrubPage, and
// its server metrics are exactly what metric.ServerTelemetry computes from those pages (what the
// verifier recomputes from the kept pages).
func TestRunKeepsScrapes(t *testing.T) {
	q := startQualsim(t, false, "--ttft", "1ms", "--token-interval", "200us")
	scrub := func(b []byte) []byte {
		return bytes.ReplaceAll(b, []byte("/v1/chat/completions"), []byte("[redacted:ROUTE]"))
	}
	plan := Plan{CaseID: "chat-stream", Case: servingCase([]int64{1, 2}, 1, 1, 8), BaseURL: q.url, ModelID: "qualsim-tiny",
		Prompts: inlinePrompts()[:3], Seed: 7, Epoch: time.Now(), ScrapeMetrics: true, ScrubPage: scrub}
	res, err := Run(context.Background(), plan)
	if err != nil {
		t.Fatal(err)
	}
	for _, rr := range res.Rows {
		tel := rr.Telemetry
		if tel == nil || tel.Before == nil || tel.After == nil || len(tel.Warnings) != 0 {
			t.Fatalf("c=%d: telemetry %+v", rr.Row.Concurrency, tel)
		}
		for _, page := range [][]byte{tel.Before, tel.After} {
			if bytes.Contains(page, []byte("/v1/chat/completions")) || !bytes.Contains(page, []byte(`"[redacted:ROUTE]"`)) {
				t.Fatalf("c=%d: a kept page was not scrubbed:\n%s", rr.Row.Concurrency, page)
			}
		}
		want, series, _, err := metric.ServerTelemetry(tel.Before, tel.After)
		if err != nil {
			t.Fatal(err)
		}
		var got []contract.Metric
		for _, m := range rr.Row.Metrics {
			if m.Formula == metric.TelemetryDelta || strings.HasPrefix(m.Name, "server_") {
				got = append(got, m)
			}
		}
		if len(got) == 0 || !reflect.DeepEqual(got, want) || !reflect.DeepEqual(series, tel.Series) {
			t.Fatalf("c=%d: the row's server metrics\n%+v\ndo not recompute from its kept pages:\n%+v", rr.Row.Concurrency, got, want)
		}
	}
}
