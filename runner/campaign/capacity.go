package campaign

import (
	"context"
	"fmt"

	"github.com/qualkit/qualkit/runner/load"
	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/metric"
)

// capacitySearch runs a capacity search case (docs/metrics.md "Capacity search"): each probe is
// one load.Run of a single closed-loop row at the concurrency metric.CapacityNext chooses from the
// probes so far, decided on that row's slo_good_fraction, until the search ends. It returns every
// row run (a full row with its records, as a grid case's) and the outcome, nil when the search
// did not end (ctx ended, or a row failed to run: err says which).
func capacitySearch(ctx context.Context, plan load.Plan, opts ...load.Option) (*load.Result, *contract.Capacity, error) {
	spec := *plan.Case.CapacitySearch
	start := plan.Case.Concurrency[0]
	res := &load.Result{}
	var probes []metric.CapacityProbe
	for {
		st := metric.CapacityNext(spec, start, probes)
		if st.Done {
			break
		}
		p := plan
		p.Case.Concurrency = []int64{st.Next}
		p.Case.Repetitions = 1
		one, err := load.Run(ctx, p, opts...)
		if one != nil {
			res.Rows = append(res.Rows, one.Rows...)
		}
		if err != nil {
			return res, nil, err
		}
		if len(one.Rows) != 1 {
			if err := ctx.Err(); err != nil {
				return res, nil, err
			}
			return res, nil, fmt.Errorf("capacity probe at concurrency %d ran %d rows, want 1", st.Next, len(one.Rows))
		}
		probes = append(probes, metric.CapacityProbe{Concurrency: st.Next, GoodFraction: metric.GoodFractionOf(one.Rows[0].Row.Metrics)})
	}
	out, err := metric.Capacity(spec, start, probes)
	if err != nil {
		return res, nil, err // a qualkit bug: the replay of the search's own probes departs from it
	}
	return res, &out, nil
}

// caseFigures are the case result's derived figures of a finished serving case: its capacity
// outcome (given), its Pareto front when the case declares one, and the confidence intervals
// across repetitions when it has more than one.
func caseFigures(cr *contract.CaseResultDoc, c contract.Case, rows []load.RowResult, capacity *contract.Capacity) {
	cr.Capacity = capacity
	if c.Pareto != nil {
		front := metric.ParetoFront(*c.Pareto, cr.Rows)
		cr.Pareto = &front
	}
	if c.Repetitions < 2 || c.CapacitySearch != nil {
		return
	}
	var groups []metric.IntervalGroup
	at := map[int64]int{}
	for _, row := range rows {
		var reqs []metric.Request
		for i := range row.Records {
			if !row.Records[i].Warmup {
				reqs = append(reqs, metric.RequestOf(&row.Records[i]))
			}
		}
		k, ok := at[row.Row.Concurrency]
		if !ok {
			k = len(groups)
			at[row.Row.Concurrency] = k
			groups = append(groups, metric.IntervalGroup{Concurrency: row.Row.Concurrency})
		}
		groups[k].Repetitions = append(groups[k].Repetitions, metric.SamplesOf(reqs))
	}
	cr.Intervals = metric.Intervals(groups)
}
