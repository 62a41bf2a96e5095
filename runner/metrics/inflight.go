package metrics

import (
	"slices"
)

// inFlight measures the achieved concurrency of a row: the most measured requests in flight at
// once (peak) and the time average of that count over the request window [lo, hi] (mean). A
// measured request that was sent is in flight from t_send to t_close (lacking t_close, to t_end;
// lacking both, it is never counted); a request closing at the instant another is sent is not
// concurrent with it. ok is false when no request was in flight or the window is empty.
func inFlight(views []view, lo, hi int64) (peak int64, mean float64, ok bool) {
	type edge struct {
		t     int64
		delta int64
	}
	var edges []edge
	for _, v := range views {
		if !v.hasSend {
			continue
		}
		end, has := v.cls, v.hasClose
		if !has {
			end, has = v.end, v.hasEnd
		}
		if !has || end <= v.send {
			continue
		}
		edges = append(edges, edge{v.send, 1}, edge{end, -1})
	}
	if len(edges) == 0 || hi <= lo {
		return 0, 0, false
	}
	// Ends before starts at equal times.
	slices.SortFunc(edges, func(a, b edge) int {
		switch {
		case a.t < b.t:
			return -1
		case a.t > b.t:
			return 1
		}
		return int(a.delta - b.delta)
	})
	var n int64
	var area float64
	prev := edges[0].t
	for _, e := range edges {
		// Integrate the count over [prev, e.t] clipped to the window.
		a, b := max(prev, lo), min(e.t, hi)
		if b > a {
			area += float64(n) * float64(b-a)
		}
		prev = e.t
		n += e.delta
		peak = max(peak, n)
	}
	return peak, area / float64(hi-lo), true
}
