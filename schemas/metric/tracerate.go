package metric

// TraceRate is a trace replay row's offered rate in requests/s (docs/metrics.md "Trace replay"):
// its n measured entries (the case's requests, else every entry of the trace) over the span of
// their scaled offsets, (n − 1) / ((lastNs − firstNs) / 1e9), where firstNs and lastNs are the
// scaled offsets (trace.Offsets) of entries 0 and n − 1. nil with fewer than two entries or an
// empty span: such a replay offers no rate. The runner records it and the verifier recomputes it
// from the bound trace.
func TraceRate(n, firstNs, lastNs int64) *float64 {
	if n < 2 {
		return nil
	}
	span := float64(lastNs-firstNs) / 1e9
	if span <= 0 {
		return nil
	}
	v := float64(n-1) / span
	return &v
}
