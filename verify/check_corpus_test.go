package verify

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/metric"
	"github.com/qualkit/qualkit/verify/internal/check/rowcheck"
	"github.com/qualkit/qualkit/verify/internal/finding"
	"github.com/qualkit/qualkit/verify/internal/record"
)

// TestCheckCorpusOrder: every measured record's corpus_index and cycle are recomputed from the
// case's prompt_order and the seed (one warmup first); an edited corpus_index, a record asking
// the sequential order where seeded was declared, and one corpus_index asking two prompts are
// found; the honest rows pass, and a file corpus (N unknown) is checked for consistency only.
func TestCheckCorpusOrder(t *testing.T) {
	const seed, n, m = 9, 4, 10
	prompts := make([]contract.Prompt, n)
	for i := range prompts {
		prompts[i] = contract.Prompt{ID: fmt.Sprintf("p-%d", i), Text: "x"}
	}
	wc := func(order contract.ServingCasePromptOrder) *contract.Case {
		return &contract.Case{Kind: contract.CaseKindServing, PromptOrder: order, Corpus: &contract.Corpus{Source: contract.CorpusSourceInline, Prompts: prompts}}
	}
	rows := func(order []int64) []*record.Record {
		recs := []*record.Record{{Index: 0, Warmup: true, PromptID: "p-0"}}
		for k, ci := range order {
			recs = append(recs, &record.Record{Line: k + 1, Index: int64(k + 1), PromptID: prompts[ci].ID, CorpusIndex: ci, Cycle: int64(k) / n, HasCorpus: true})
		}
		return recs
	}
	seeded := metric.CorpusOrder(contract.ServingCasePromptOrderSeeded, seed, n, m)
	sequential := metric.CorpusOrder(contract.ServingCasePromptOrderSequential, seed, n, m)
	edited := rows(seeded)
	edited[3].CorpusIndex = (edited[3].CorpusIndex + 1) % n
	edited[3].PromptID = prompts[edited[3].CorpusIndex].ID
	twoPrompts := rows(sequential)
	twoPrompts[5].PromptID = "p-3"
	file := &contract.Case{Kind: contract.CaseKindServing, Corpus: &contract.Corpus{Source: contract.CorpusSourceFile}}
	cases := []struct {
		name string
		wc   *contract.Case
		recs []*record.Record
		want string
	}{
		{"seeded honest", wc(contract.ServingCasePromptOrderSeeded), rows(seeded), ""},
		{"sequential honest", wc(""), rows(sequential), ""},
		{"seeded edited", wc(contract.ServingCasePromptOrderSeeded), edited, "the seeded order of seed 9"},
		{"sequential sent for seeded", wc(contract.ServingCasePromptOrderSeeded), rows(sequential), "the seeded order"},
		{"one index two prompts", wc(""), twoPrompts, "which another request of the row asks"},
		{"file corpus consistent", file, rows(seeded), ""},
		{"file corpus inconsistent", file, twoPrompts, "which another request of the row asks"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := &finding.Collector{Check: CheckTolerances}
			rowcheck.CorpusOrder(c, contract.Row{Concurrency: 2}, tc.wc, seed, tc.recs)
			res := c.Result()
			if tc.want == "" {
				if len(res.Findings) != 0 {
					t.Fatalf("findings %v", res.Findings)
				}
				return
			}
			for _, f := range res.Findings {
				if errors.Is(f, ErrRowMismatch) && strings.Contains(f.Error(), tc.want) {
					return
				}
			}
			t.Fatalf("no finding mentioning %q: %v", tc.want, res.Findings)
		})
	}
}
