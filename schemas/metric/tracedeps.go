package metric

// Trace entries that wait for a parent (docs/metrics.md "Trace replay": the later turns of a
// Bailian conversation, an agent's next call) are scheduled at their trace offset or when their
// parent's request ended, whichever is later; an entry that waits for several (a join: the turn
// after a group of sub-agents) when the last of them ended. Both the runner and the verifier take
// each end from the parent's record with Ended.

// Ended is when a request ended on the client's clock: its stream's close (t_close_ns), or, for a
// request that has none (it failed before or while it was answered), the latest of its other
// times (schedule, send, headers, last content event, end).
func Ended(r *Request) int64 {
	if r.HasClose {
		return r.Close
	}
	end := r.Sched
	for _, t := range []struct {
		v  int64
		ok bool
	}{{r.Send, r.HasSend}, {r.Hdr, r.HasHdr}, {r.End, r.HasEnd}} {
		if t.ok {
			end = max(end, t.v)
		}
	}
	if n := len(r.Content); n > 0 {
		end = max(end, r.Content[n-1])
	}
	return end
}

// AfterParents is the scheduled send of a trace entry that waits for its parents: its trace
// offset from the row's start (atNs, on the records' clock) or the latest of its parents' ends
// (Ended), whichever is later.
func AfterParents(atNs int64, parentsEndedNs ...int64) int64 {
	for _, e := range parentsEndedNs {
		atNs = max(atNs, e)
	}
	return atNs
}
