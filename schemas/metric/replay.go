package metric

import "github.com/qualkit/qualkit/schemas/contract"

// Trace replay (docs/metrics.md "Trace replay"): a trace row schedules request k at the row's
// start plus its scaled trace offset, so its t_sched is the trace's time and the replay's send
// error is |t_send − t_sched|; the runner reports and the verifier recomputes it with ReplayOf.

// ReplayOf fills a row's replay block from its measured requests: entries counts them (sent or
// not) and the send errors |t_send − t_sched| in ms over the sent ones are summarised as p50,
// p99 (type 7) and max (0 with none sent). The trace's digest, time scale and length unit are
// the caller's; words_per_token is recorded only with that unit.
func ReplayOf(measured []Request, traceDigest string, timeScale float64, unit contract.RowReplayLengthUnit, wordsPerToken float64) contract.RowReplay {
	if unit != contract.RowReplayLengthUnitWordsPerToken {
		wordsPerToken = 0
	}
	var errs []float64
	for i := range measured {
		if r := &measured[i]; r.HasSend {
			d := r.Send - r.Sched
			if d < 0 {
				d = -d
			}
			errs = append(errs, ms(d))
		}
	}
	rp := contract.RowReplay{TraceDigest: traceDigest, TimeScale: timeScale, LengthUnit: unit, WordsPerToken: wordsPerToken, Entries: int64(len(measured))}
	if len(errs) > 0 {
		s := Summarize(errs)
		rp.SendErrorP50Ms, rp.SendErrorP99Ms, rp.SendErrorMaxMs = s.P50, s.P99, s.Max
	}
	return rp
}
