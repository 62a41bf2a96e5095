package load

import (
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/metric"
)

// calibrate times the client's own send path before a row (docs/metrics.md "Client fidelity"):
// metric.CalibrationSends of the row's measured requests, in order (cycled when fewer), each
// built and written by Client.Start on a locked, timer-precise thread like the open-loop
// dispatcher's, to a loopback sink of this process that reads and discards and never answers
// (so the server sees nothing). The sink's connections are opened before the timing, as the row's
// are. Each sample is one Start; the calibration's 0.9-quantile is the least each send ahead of a
// burst's arrival is credited (a send whose own write took longer, t_sent - t_send, is credited
// that, up to the row's lag bound: metric's serialised). nil when no sink could be opened or
// nothing was timed.
func (r *runner) calibrate(ctx context.Context, reqs []request) *contract.SendCalibration {
	if len(reqs) == 0 || ctx.Err() != nil {
		return nil
	}
	n := metric.CalibrationSends
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		r.log.log.Debug("calibration sink", "err", err)
		return nil
	}
	var sinks sync.WaitGroup
	sinks.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			sinks.Go(func() { io.Copy(io.Discard, c); c.Close() })
		}
	})
	defer func() { ln.Close(); sinks.Wait() }()
	sink, err := NewClient("http://"+ln.Addr().String(), WithReactors(1), WithMaxIdleConns(n), WithBearerToken(r.client.token), WithLogger(r.log.log))
	if err != nil {
		r.log.log.Debug("calibration client", "err", err)
		return nil
	}
	defer sink.Close()
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := sink.Prewarm(cctx, n); err != nil {
		r.log.log.Debug("calibration prewarm", "err", err)
		return nil
	}
	samples := make([]int64, 0, n)
	calls := make([]*Call, 0, n)
	func() {
		p := startPacer()
		defer p.stop()
		for i := range n {
			if cctx.Err() != nil {
				return
			}
			t0 := time.Now()
			call := sink.Start(cctx, r.request(&reqs[i%len(reqs)]))
			samples = append(samples, int64(time.Since(t0)))
			calls = append(calls, call)
		}
	}()
	cancel()
	for _, k := range calls {
		k.Wait()
	}
	if len(samples) == 0 {
		return nil
	}
	cal := &contract.SendCalibration{SamplesNs: samples, SendCostNs: metric.SendCostNs(samples)}
	if m := r.client.opt.maxConns; m > 0 {
		v := int64(m)
		cal.Connections = &v
	}
	return cal
}

// DistortionEnv names a test-only variable that makes the client distort its own load, so that
// tests can show the fidelity verdict catches it: a comma-separated list of stall=DURATION/N
// (the open-loop dispatcher sleeps DURATION after every N-th send) and conns=N (the client keeps
// at most N connections open, as WithMaxConns). Never set it for a measurement: the rows it
// distorts are judged degraded, as they should be.
const DistortionEnv = "QUALKIT_TEST_CLIENT_DISTORTION"

// distortion parses DistortionEnv's value into options ("" gives none).
func distortion(v string) ([]Option, error) {
	var out []Option
	for f := range strings.SplitSeq(v, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		key, val, _ := strings.Cut(f, "=")
		switch key {
		case "stall":
			ds, ns, ok := strings.Cut(val, "/")
			d, err := time.ParseDuration(ds)
			every, err2 := strconv.Atoi(ns)
			if !ok || err != nil || err2 != nil || d <= 0 || every < 1 {
				return nil, fmt.Errorf("%w: %s %q: want stall=DURATION/N, e.g. stall=5ms/100", ErrPlan, DistortionEnv, f)
			}
			out = append(out, func(o *options) { o.stall = stall{every: every, d: d} })
		case "conns":
			m, err := strconv.Atoi(val)
			if err != nil || m < 1 {
				return nil, fmt.Errorf("%w: %s %q: want conns=N, N >= 1", ErrPlan, DistortionEnv, f)
			}
			out = append(out, WithMaxConns(m))
		default:
			return nil, fmt.Errorf("%w: %s %q: want stall=DURATION/N or conns=N", ErrPlan, DistortionEnv, f)
		}
	}
	return out, nil
}
