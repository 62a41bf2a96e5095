package tools_test

import (
	"encoding/json"
	"path/filepath"
	"strconv"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/evidence"
	"github.com/qualkit/qualkit/tools/internal/numfmt"
	"github.com/rogpeppe/go-internal/testscript"
)

// cmdRowValue RECEIPT RESULT ROW NAME VAR: follow the receipt's results[RESULT].case_result to the
// case result it binds (a path relative to the script's working directory, the repository root)
// and set $VAR to the value of rows[ROW]'s metric NAME, or of fidelity.NAME for in_flight_peak,
// in_flight_mean, achieved_rate and offered_rate, as qualrun prints numbers (numfmt.Number), with
// regexp metacharacters escaped. So a script checks that the summary prints the evidence's
// numbers.
func cmdRowValue(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 5 {
		ts.Fatalf("usage: rowvalue RECEIPT RESULT ROW NAME VAR")
	}
	var rc contract.ReceiptDoc
	if err := json.Unmarshal([]byte(ts.ReadFile(args[0])), &rc); err != nil {
		ts.Fatalf("%s: %v", args[0], err)
	}
	ri, _ := strconv.Atoi(args[1])
	if ri < 0 || ri >= len(rc.Results) || rc.Results[ri].CaseResult == nil {
		ts.Fatalf("%s: no result %s with a case result", args[0], args[1])
	}
	var cr contract.CaseResultDoc
	if err := json.Unmarshal([]byte(ts.ReadFile(filepath.FromSlash(rc.Results[ri].CaseResult.Path))), &cr); err != nil {
		ts.Fatalf("case result: %v", err)
	}
	row, _ := strconv.Atoi(args[2])
	if row < 0 || row >= len(cr.Rows) {
		ts.Fatalf("case result has no row %s", args[2])
	}
	r := cr.Rows[row]
	var v float64
	found := false
	switch args[3] {
	case "in_flight_peak":
		if r.Fidelity.InFlightPeak != nil {
			v, found = float64(*r.Fidelity.InFlightPeak), true
		}
	case "in_flight_mean":
		if r.Fidelity.InFlightMean != nil {
			v, found = *r.Fidelity.InFlightMean, true
		}
	case "achieved_rate":
		v, found = r.Fidelity.AchievedRate, true
	case "offered_rate":
		if r.Fidelity.OfferedRate != nil {
			v, found = *r.Fidelity.OfferedRate, true
		}
	default:
		for _, m := range r.Metrics {
			if m.Name == args[3] {
				v, found = m.Value, true
			}
		}
	}
	if !found {
		ts.Fatalf("row %s has no %s", args[2], args[3])
	}
	s := numfmt.Number(v)
	out := ""
	for _, c := range s {
		if c == '.' || c == '+' || c == '-' {
			out += `\`
		}
		out += string(c)
	}
	ts.Setenv(args[4], out)
}

// cmdDigest FILE VAR: set $VAR to FILE's digest as qualkit writes it (sha256:<hex>).
func cmdDigest(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: digest FILE VAR")
	}
	ts.Setenv(args[1], evidence.DigestOf([]byte(ts.ReadFile(args[0]))))
}
