package report

import (
	"slices"
	"strconv"
	"strings"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/verify/report/internal/format"
)

// turnsOf is a session row's TTFT by turn position (ttft_by_turn.v1's metrics
// "ttft_p50_ms.turn<k>", as verification recomputed them), in turn order; nil outside a session
// row.
func turnsOf(got map[string]contract.Metric) []contract.ViewRowTurn {
	var out []contract.ViewRowTurn
	for name, m := range got {
		k, ok := strings.CutPrefix(name, "ttft_p50_ms.turn")
		if !ok {
			continue
		}
		turn, err := strconv.ParseInt(k, 10, 64)
		if err != nil || turn < 0 || turn > 255 {
			continue
		}
		t := contract.ViewRowTurn{Turn: turn, TTFTP50Ms: m.Value}
		if m.Samples != nil {
			t.Samples = *m.Samples
		}
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b contract.ViewRowTurn) int { return int(a.Turn - b.Turn) })
	return out
}

// turnsTable is the text report's per-turn TTFT table of a case's session rows: one line per
// row, one column per turn position ("-" where a row has no such turn); nil when no row has
// turns.
func turnsTable(rows []Row) [][]string {
	maxTurn := int64(-1)
	for i := range rows {
		for _, t := range rows[i].Turns {
			maxTurn = max(maxTurn, t.Turn)
		}
	}
	if maxTurn < 0 {
		return nil
	}
	head := []string{"row"}
	for k := range maxTurn + 1 {
		head = append(head, "turn "+strconv.FormatInt(k, 10))
	}
	out := [][]string{head}
	for i := range rows {
		if len(rows[i].Turns) == 0 {
			continue
		}
		line := []string{rows[i].Name}
		for k := range maxTurn + 1 {
			cell := "-"
			for _, t := range rows[i].Turns {
				if t.Turn == k {
					cell = format.Num(t.TTFTP50Ms) + " (" + strconv.FormatInt(t.Samples, 10) + ")"
				}
			}
			line = append(line, cell)
		}
		out = append(out, line)
	}
	return out
}

// ledgerTable is the text report's token-ledger table of a case's rows (compared, mismatched,
// their fraction, the largest prompt and completion differences, server minus client, and
// whether the row broke its declared threshold); nil when no row has a ledger.
func ledgerTable(rows []Row) [][]string {
	out := [][]string{{"row", "compared", "mismatched", "fraction", "largest prompt diff", "largest completion diff", "threshold"}}
	for i := range rows {
		t := rows[i].Tokens
		if t == nil {
			continue
		}
		threshold := "kept"
		if t.Exceeded != nil {
			threshold = "EXCEEDED"
		}
		out = append(out, []string{rows[i].Name, strconv.FormatInt(t.Compared, 10), strconv.FormatInt(t.Mismatched, 10), format.NumPtr(t.MismatchFraction),
			strconv.FormatInt(t.LargestPromptDifference, 10), strconv.FormatInt(t.LargestCompletionDifference, 10), threshold})
	}
	if len(out) == 1 {
		return nil
	}
	return out
}
