package rules

import (
	"encoding/json"

	"github.com/qualkit/qualkit/schemas/contract"
)

// CheckFleetPlan checks what a fleet plan's schema cannot: rows[i].index is i, so that an
// engine's task index (SLURM_ARRAY_TASK_ID, JOB_COMPLETION_INDEX) names one row on every host; and
// no two rows are the same job (the same workload, variant, variables, repetition and host
// selector), so that a fleet's receipts map one-to-one onto rows.
func CheckFleetPlan(d *contract.FleetPlanDoc) []Problem {
	r := &rules{}
	seen := map[string]int{}
	for i, row := range d.Rows {
		if row.Index != int64(i) {
			r.add(ptr("rows", i, "index"), "row index is %d but the row is rows[%d]: indices are the rows' positions from 0; renumber the rows", row.Index, i)
		}
		key := rowKey(row)
		if j, dup := seen[key]; dup {
			r.add(ptr("rows", i), "row repeats /rows/%d (same workload, variant, variables, repetition and host): give it another repetition number or remove it", j)
			continue
		}
		seen[key] = i
	}
	return r.out
}

// rowKey is a row's identity without its index: its canonical JSON (map keys sorted by
// encoding/json).
func rowKey(row contract.FleetRow) string {
	row.Index = 0
	b, err := json.Marshal(row)
	if err != nil {
		// A FleetRow holds strings, integers and string maps: it always marshals.
		panic(err)
	}
	return string(b)
}
