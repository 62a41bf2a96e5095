package bench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/qualkit/qualkit/runner/load"
)

// StreamResult is what a reader saw of one stream: the completion id of its first event and the
// CLOCK_MONOTONIC time at which it read each event.
type StreamResult struct {
	ID     string  `json:"id"`
	Stamps []int64 `json:"stamps"`
	Err    *string `json:"err"`
}

// ChatBody is the streamed chat completion every reader sends.
func ChatBody(maxTokens int) []byte {
	return fmt.Appendf(nil, `{"model":"qualsim-tiny","messages":[{"role":"user","content":"hello there"}],"max_tokens":%d,"stream":true,"stream_options":{"include_usage":true},"ignore_eos":true}`, maxTokens)
}

func errText(err error) *string {
	if err == nil {
		return nil
	}
	s := err.Error()
	return &s
}

// QualkitStreams runs n streams with qualkit's client (package load), released together once n
// connections are open, and converts its event stamps to CLOCK_MONOTONIC.
func QualkitStreams(baseURL string, n, maxTokens int, opts ...load.Option) ([]StreamResult, error) {
	c, err := load.NewClient(baseURL, append([]load.Option{load.WithMaxIdleConns(n)}, opts...)...)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	ctx := context.Background()
	if err := c.Prewarm(ctx, n); err != nil {
		return nil, err
	}
	epoch := time.Now()
	base := load.MonotonicNanos(epoch)
	out := make([]StreamResult, n)
	body := ChatBody(maxTokens)
	start := make(chan struct{})
	var ready, done sync.WaitGroup
	for i := range n {
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			ready.Done()
			<-start
			r := c.Do(ctx, load.Request{Path: "/v1/chat/completions", Body: body, Stream: true, Epoch: epoch, Timeout: 5 * time.Minute, ExpectEvents: maxTokens + 8})
			res := StreamResult{ID: r.ID, Stamps: make([]int64, len(r.Events))}
			for k, e := range r.Events {
				res.Stamps[k] = base + e.TNs
			}
			if r.Err != nil {
				res.Err = &r.Err.Message
			}
			out[i] = res
		}()
	}
	ready.Wait()
	close(start)
	done.Wait()
	return out, nil
}

// GoMinimalStreams is the minimal Go baseline: net/http with enough idle connections, one
// goroutine per stream reading lines with bufio.Reader.ReadSlice and stamping each "data:" line
// with time.Now as soon as it is returned; no JSON parsing, no records.
func GoMinimalStreams(baseURL string, n, maxTokens int) ([]StreamResult, error) {
	tr := &http.Transport{MaxIdleConnsPerHost: n, MaxConnsPerHost: 0, DisableCompression: true}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	out := make([]StreamResult, n)
	body := ChatBody(maxTokens)
	start := make(chan struct{})
	var ready, done sync.WaitGroup
	for i := range n {
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			ready.Done()
			<-start
			res := StreamResult{}
			defer func() { out[i] = res }()
			resp, err := hc.Post(baseURL+"/v1/chat/completions", "application/json", bytes.NewReader(body))
			if err != nil {
				res.Err = errText(err)
				return
			}
			defer resp.Body.Close()
			br := bufio.NewReaderSize(resp.Body, 64<<10)
			for {
				line, err := br.ReadSlice('\n')
				if bytes.HasPrefix(line, []byte("data:")) {
					res.Stamps = append(res.Stamps, load.MonotonicNanos(time.Now()))
					if res.ID == "" {
						if k := bytes.Index(line, []byte(`"id":"`)); k >= 0 {
							rest := line[k+6:]
							if j := bytes.IndexByte(rest, '"'); j >= 0 {
								res.ID = string(rest[:j])
							}
						}
					}
				}
				if err != nil {
					if !errors.Is(err, io.EOF) { // io.ErrUnexpectedEOF (a cut stream) is a failure
						res.Err = errText(err)
					}
					return
				}
			}
		}()
	}
	ready.Wait()
	close(start)
	done.Wait()
	return out, nil
}

// QualkitShort sends short requests (body) with qualkit's client from the given number of
// closed-loop workers for d, and returns the successful requests and the time taken.
func QualkitShort(baseURL string, workers int, d time.Duration, body []byte) (int64, time.Duration, int64, error) {
	c, err := load.NewClient(baseURL, load.WithMaxIdleConns(workers))
	if err != nil {
		return 0, 0, 0, err
	}
	defer c.Close()
	ctx := context.Background()
	if err := c.Prewarm(ctx, workers); err != nil {
		return 0, 0, 0, err
	}
	var ok, failed atomic.Int64
	epoch := time.Now()
	deadline := epoch.Add(d)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				r := c.Do(ctx, load.Request{Path: "/v1/chat/completions", Body: body, Stream: true, Epoch: epoch, Timeout: time.Minute, ExpectEvents: 8})
				if r.Err != nil {
					failed.Add(1)
				} else {
					ok.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	return ok.Load(), time.Since(epoch), failed.Load(), nil
}

// GoMinimalOpenLoop is the open-loop baseline of the arrival rows: one dispatcher goroutine
// sleeps with time.Sleep until each scheduled offset (from its start), then starts a goroutine
// that posts a streamed request with net/http (at most inflight at once, arrivals that find every
// slot busy wait) and reads the response to its end. It returns each request's scheduled and send
// times (send: just before http.Client.Do) in ns from its start, and the failures.
func GoMinimalOpenLoop(baseURL string, offsets []time.Duration, maxTokens, inflight int) (sched, send []int64, failed int64) {
	tr := &http.Transport{MaxIdleConnsPerHost: inflight, DisableCompression: true}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	body := ChatBody(maxTokens)
	sched, send = make([]int64, len(offsets)), make([]int64, len(offsets))
	slots := make(chan struct{}, inflight)
	var wg sync.WaitGroup
	var bad atomic.Int64
	t0 := time.Now()
	for i, off := range offsets {
		if d := time.Until(t0.Add(off)); d > 0 {
			time.Sleep(d)
		}
		slots <- struct{}{}
		sched[i] = int64(off)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			req, _ := http.NewRequest(http.MethodPost, baseURL+"/v1/chat/completions", bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			send[i] = int64(time.Since(t0))
			resp, err := hc.Do(req)
			if err != nil {
				bad.Add(1)
				return
			}
			defer resp.Body.Close()
			br := bufio.NewReaderSize(resp.Body, 64<<10)
			for {
				if _, err := br.ReadSlice('\n'); err != nil {
					if !errors.Is(err, io.EOF) { // io.ErrUnexpectedEOF (a cut stream) is a failure
						bad.Add(1)
					}
					return
				}
			}
		}()
	}
	wg.Wait()
	return sched, send, bad.Load()
}
