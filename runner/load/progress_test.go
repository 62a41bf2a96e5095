package load

import (
	"context"
	"sync"
	"testing"
	"time"
)

// Plan.Progress hears, for each row in order, its start, every measured request (never a warmup)
// with Done counting up to Total, and its end with every request counted.
func TestProgressCallbacks(t *testing.T) {
	url := startSim(t, fastSim())
	var mu sync.Mutex
	var got []Progress
	plan := Plan{CaseID: "chat-stream", Case: servingCase([]int64{1, 3}, 1, 2, 4), BaseURL: url, ModelID: "qualsim-tiny",
		Prompts: SyntheticWords(5, 6, 2, 6), Seed: 3, Epoch: time.Now(),
		Progress: func(p Progress) {
			mu.Lock()
			got = append(got, p)
			mu.Unlock()
		}}
	if _, err := Run(context.Background(), plan); err != nil {
		t.Fatal(err)
	}
	i := 0
	for _, c := range []int64{1, 3} {
		if i >= len(got) || got[i].Kind != ProgressRowStart || got[i].Concurrency != c || got[i].Done != 0 || got[i].Total != 6 {
			t.Fatalf("event %d: %+v, want the start of row c=%d", i, got[min(i, len(got)-1)], c)
		}
		i++
		seen := map[int64]bool{}
		for ; i < len(got) && got[i].Kind == ProgressRequest; i++ {
			if got[i].Concurrency != c || got[i].Done < 1 || got[i].Done > 6 || got[i].Failed != 0 {
				t.Fatalf("event %d: %+v", i, got[i])
			}
			seen[got[i].Done] = true
		}
		if len(seen) != 6 {
			t.Errorf("row c=%d: %d distinct request counts, want 6 (one per measured request, warmups excluded)", c, len(seen))
		}
		if i >= len(got) || got[i].Kind != ProgressRowDone || got[i].Done != 6 || got[i].Total != 6 {
			t.Fatalf("event %d: %+v, want the end of row c=%d with 6/6", i, got[min(i, len(got)-1)], c)
		}
		i++
	}
	if i != len(got) {
		t.Errorf("%d events after the last row", len(got)-i)
	}
}
