package load

import (
	"context"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/qualkit/qualkit/schemas/contract"
)

// TestRecordSinkSeesEveryRecordAsItEnds: the sink receives each record once, before its row
// is returned, and the set equals the records Run returns (warmups included).
func TestRecordSinkSeesEveryRecordAsItEnds(t *testing.T) {
	q := startQualsim(t, false, "--ttft", "1ms", "--token-interval", "1ms")
	plan := Plan{CaseID: "sink", Case: servingCase([]int64{1, 3}, 2, 1, 4), BaseURL: q.url, ModelID: "qualsim-tiny",
		Prompts: inlinePrompts(), Seed: 1, Epoch: time.Now()}
	var mu sync.Mutex
	seen := map[contract.RowKey][]int64{}
	res, err := Run(context.Background(), plan, WithRecordSink(func(r *contract.RequestRecordDoc) {
		mu.Lock()
		seen[r.Row] = append(seen[r.Row], r.Index)
		mu.Unlock()
	}))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 4 || len(seen) != 4 {
		t.Fatalf("%d rows, the sink saw %d", len(res.Rows), len(seen))
	}
	for _, row := range res.Rows {
		got := seen[contract.RowKey{Concurrency: row.Row.Concurrency, Repetition: row.Row.Repetition}]
		sort.Slice(got, func(i, j int) bool { return got[i] < got[j] })
		if len(got) != len(row.Records) {
			t.Fatalf("row c=%d r=%d: sink saw %d records, Run returned %d", row.Row.Concurrency, row.Row.Repetition, len(got), len(row.Records))
		}
		for i, rec := range row.Records {
			if got[i] != rec.Index {
				t.Fatalf("row c=%d r=%d: sink indexes %v", row.Row.Concurrency, row.Row.Repetition, got)
			}
		}
	}
}
