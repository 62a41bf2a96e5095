package metric

import (
	"fmt"

	"github.com/qualkit/qualkit/schemas/contract"
)

// legacyLagP99Ms is the fidelity bound of evidence written before the judgement of fidelity.go
// (rows without fidelity.judgement): the p99 of the client's own lag above 1 ms degraded a row.
const legacyLagP99Ms = 1.0

// legacyFidelity is the fidelity rule such evidence was written with (RowSpec.Legacy), kept so
// that the verifier recomputes an old row by the rule that judged it: the p99 of the lag of the
// arrivals that found a free slot against 1 ms, the p99 of every lag against DegradedOpenLagMs
// and the rate rule.
func legacyFidelity(spec RowSpec, measured []Request, lags []float64, achieved float64) Fidelity {
	s := Summarize(lags)
	f := Fidelity{
		ScheduleLagP50Ms: max(0, s.P50), ScheduleLagP99Ms: max(0, s.P99), ScheduleLagMaxMs: max(0, s.Max),
		AchievedRate: achieved, Reasons: []string{},
	}
	own := lags
	capped := 0
	if spec.Loop == contract.RowLoopOpen {
		own = nil
		for j := range measured {
			v := &measured[j]
			if !v.HasSend {
				continue
			}
			busy := int64(0)
			for i := range measured {
				u := &measured[i]
				if i != j && u.HasSend && u.Send <= v.Sched && (!u.HasClose || u.Close > v.Sched) {
					busy++
				}
			}
			if busy >= spec.Concurrency {
				capped++
				continue
			}
			own = append(own, ms(v.Send-v.Sched))
		}
	}
	if len(own) > 0 {
		if p99 := Summarize(own).P99; p99 > legacyLagP99Ms {
			f.Degraded = true
			what := "schedule lag"
			if spec.Loop == contract.RowLoopOpen {
				what = "schedule lag of arrivals that found a free slot"
			}
			f.Reasons = append(f.Reasons, fmt.Sprintf("p99 %s %.3f ms exceeds %.3f ms: the client, not the server, delayed requests", what, p99, legacyLagP99Ms))
		}
	}
	if f.Degraded && capped > 0 {
		f.Reasons = append(f.Reasons, fmt.Sprintf("%d arrivals found all %d slots busy (server-bound, excluded from the lag bound)", capped, spec.Concurrency))
	}
	if spec.Loop == contract.RowLoopOpen {
		if len(lags) > 0 && s.P99 > DegradedOpenLagMs {
			f.Degraded = true
			f.Reasons = append(f.Reasons, fmt.Sprintf("p99 schedule lag %.3f ms over every sent arrival exceeds %.3f ms: requests went out behind their schedule (%d of %d found all %d slots busy)", s.P99, DegradedOpenLagMs, capped, len(lags), spec.Concurrency))
		}
		if sched, n := Scheduled(measured); n >= 2 && sched > 0 && achieved < DegradedRateFraction*sched {
			f.Degraded = true
			offered := ""
			if spec.OfferedRate != nil {
				offered = fmt.Sprintf(", offered %g/s", *spec.OfferedRate)
			}
			f.Reasons = append(f.Reasons, fmt.Sprintf("achieved rate %.3f/s is below %g of the scheduled rate %.3f/s%s: the row did not sustain its offered load", achieved, DegradedRateFraction, sched, offered))
		}
	}
	return f
}
