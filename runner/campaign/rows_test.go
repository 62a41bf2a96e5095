package campaign

import (
	"strings"
	"testing"

	"github.com/qualkit/qualkit/schemas/contract"
)

// A degraded closed-loop row neither fails its case nor makes the receipt unpublishable (a note
// names it); a degraded open-loop row fails its case; neither is reported for rows that kept
// their fidelity.
func TestDegradedRowsSplitByLoop(t *testing.T) {
	row := func(loop string, c int64, degraded bool) contract.Row {
		r := contract.Row{Concurrency: c, Loop: contract.RowLoop(loop)}
		r.Fidelity.Degraded = degraded
		if degraded {
			r.Fidelity.Reasons = []string{"p99 schedule lag 1.070 ms exceeds 1.000 ms"}
		}
		return r
	}
	rows := []contract.Row{row("closed", 1, false), row("closed", 4, true), row("open", 8, false)}
	if got := degradedRows(rows); got != "" {
		t.Errorf("degradedRows = %q, want none (only a closed-loop row is degraded)", got)
	}
	lag := laggingRows(rows)
	if !strings.Contains(lag, "1 of 2 closed-loop rows degraded") || !strings.Contains(lag, "row c=4 r=0: p99 schedule lag") {
		t.Errorf("laggingRows = %q", lag)
	}
	rows = append(rows, row("open", 16, true))
	if got := degradedRows(rows); !strings.Contains(got, "1 of 2 open-loop rows degraded") {
		t.Errorf("degradedRows = %q", got)
	}
	if got := laggingRows(rows[:1]); got != "" {
		t.Errorf("laggingRows of a row that kept fidelity = %q", got)
	}
	r := &run{lagging: []string{"case chat (repetition 0): " + lag}}
	if reasons := r.saturationReasons(); len(reasons) != 0 {
		t.Errorf("saturationReasons = %q, want none (a lagging closed-loop row stays publishable)", reasons)
	}
	if notes := r.laggingNotes(); len(notes) != 1 || !strings.Contains(notes[0], "performance comparisons of these rows are refused") {
		t.Errorf("laggingNotes = %q", notes)
	}
}
