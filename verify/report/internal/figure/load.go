package figure

import (
	"github.com/qualkit/qualkit/schemas/contract"
)

// loadAxis is the x axis of a case's throughput charts: the offered rate when every row is open
// loop with a declared rate (an open-loop case's load is its rate, not the concurrency cap),
// else the concurrency.
func loadAxis(c contract.ViewCase) (string, func(contract.ViewRow) float64) {
	open := len(c.Rows) > 0
	for _, r := range c.Rows {
		if r.Loop != contract.RowLoopOpen || r.Fidelity.OfferedRate == nil {
			open = false
		}
	}
	if open {
		return "offered rate (requests/s)", func(r contract.ViewRow) float64 { return *r.Fidelity.OfferedRate }
	}
	return "concurrency", func(r contract.ViewRow) float64 { return float64(r.Concurrency) }
}

func Throughput(c contract.ViewCase) string {
	axis, at := loadAxis(c)
	s := series{name: "output tokens/s (request window)", color: colP50}
	for _, r := range c.Rows {
		if r.Throughput.OutputTokensPerSecond != nil {
			s.points = append(s.points, point{at(r), *r.Throughput.OutputTokensPerSecond})
		}
	}
	return concurrency("Request-window output throughput", "tokens/s", axis, []series{s})
}

func Rate(c contract.ViewCase) string {
	axis, at := loadAxis(c)
	req := series{name: "requests/s", color: colCurve}
	good := series{name: "SLO goodput", color: colGreen, dash: "5 4"}
	for _, r := range c.Rows {
		if r.Throughput.RequestsPerSecond != nil {
			req.points = append(req.points, point{at(r), *r.Throughput.RequestsPerSecond})
		}
		if r.Throughput.GoodputPerSecond != nil {
			good.points = append(good.points, point{at(r), *r.Throughput.GoodputPerSecond})
		}
	}
	ss := []series{req}
	if len(good.points) > 0 {
		ss = append(ss, good)
	}
	if axis != "concurrency" {
		// An open-loop case: the rate the client sent at beside what the server completed.
		sent := series{name: "achieved send rate", color: colAxis, dash: "2 3"}
		for _, r := range c.Rows {
			sent.points = append(sent.points, point{at(r), r.Fidelity.AchievedRate})
		}
		ss = append(ss, sent)
	}
	return concurrency("Request throughput and goodput", "requests/s", axis, ss)
}
