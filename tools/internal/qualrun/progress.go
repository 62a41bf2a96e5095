package qualrun

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/qualkit/qualkit/runner/campaign"
	"github.com/qualkit/qualkit/tools/internal/cliapp"
	"github.com/qualkit/qualkit/tools/internal/numfmt"
	"github.com/schollz/progressbar/v3"
)

// defaultProgressInterval is the most often the non-terminal display prints a running row's
// periodic line.
const defaultProgressInterval = 10 * time.Second

// progress renders campaign events. On a terminal: a spinner-style bar with the current step.
// On any other stderr (CI logs, pipes): one line per step, per row start and completion, and,
// while a row runs, a line every interval with its requests done/total, rate and failures. It
// stays silent when disabled (--json).
type progress struct {
	mu  sync.Mutex
	bar *progressbar.ProgressBar
	// lastBar is when the bar last showed a request event (throttled: requests can end by the
	// thousand per second).
	lastBar time.Time

	// Line mode (w != nil).
	w        io.Writer
	interval time.Duration
	row      rowState
	// step and stepAt are the last step line printed and when (a long step prints its progress
	// at most every interval).
	step   string
	stepAt time.Time
	stop   chan struct{} // closes the running row's ticker
	ticker sync.WaitGroup
}

// rowState is the running row, for the periodic line.
type rowState struct {
	name                  string
	start                 time.Time
	done, failures, total int
	running               bool
	index, rows           int
}

// newProgress renders on w: the bar when tty (stderr is a terminal; see isTerminal), lines
// otherwise, nothing when disabled.
func newProgress(w io.Writer, tty, enabled bool, interval time.Duration) *progress {
	if !enabled {
		return &progress{}
	}
	if !tty {
		if interval <= 0 {
			interval = defaultProgressInterval
		}
		return &progress{w: w, interval: interval}
	}
	bar := progressbar.NewOptions(-1,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSpinnerType(14),
		progressbar.OptionSetDescription("preflight"),
		progressbar.OptionClearOnFinish(),
		progressbar.OptionThrottle(0),
	)
	return &progress{bar: bar}
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && isatty.IsTerminal(f.Fd())
}

// event is campaign.Config.Progress: safe for concurrent use (request events come from the
// request goroutines).
func (p *progress) event(e campaign.Event) {
	switch {
	case p.bar != nil:
		p.barEvent(e)
	case p.w != nil:
		p.lineEvent(e)
	}
}

func (p *progress) barEvent(e campaign.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if e.Phase == "requests" {
		if time.Since(p.lastBar) < 100*time.Millisecond && e.Done != e.Total {
			return
		}
		p.lastBar = time.Now()
	}
	desc := e.Phase + ": " + e.Message
	if e.Total > 0 {
		desc = fmt.Sprintf("%s [%d/%d]", desc, e.Done, e.Total)
	}
	if e.Failures > 0 {
		desc = fmt.Sprintf("%s %d failed", desc, e.Failures)
	}
	p.bar.Describe(cliapp.Safe(desc))
	_ = p.bar.Add(1)
}

func (p *progress) lineEvent(e campaign.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch e.Phase {
	case "requests":
		p.row.done, p.row.failures, p.row.total = e.Done, e.Failures, e.Total
	case "row":
		// the row's records are written: row_done already said it, live
	case "row_start":
		p.stopTicker()
		name, _, _ := strings.Cut(e.Message, ": ")
		p.row = rowState{name: name, start: time.Now(), running: true, index: e.Done, rows: e.Total}
		cliapp.Fprintf(p.w, "qualrun: row %d/%d started: %s\n", e.Done, e.Total, e.Message)
		p.startTicker()
	case "row_done":
		p.stopTicker()
		el := time.Since(p.row.start)
		cliapp.Fprintf(p.w, "qualrun: row %d/%d done: %s: %d/%d requests ended, %d failed, %s s\n",
			p.row.index, p.row.rows, e.Message, e.Done, e.Total, e.Failures, numfmt.Number(el.Seconds()))
		p.row = rowState{}
	default:
		msg := e.Message
		if e.Total > 0 && e.Done > 1 && e.Done < e.Total && e.Message == p.step && time.Since(p.stepAt) < p.interval {
			return // a long step's progress (a prompt synthesis): a line every interval, and its last
		}
		p.step, p.stepAt = e.Message, time.Now()
		if e.Total > 0 {
			msg = fmt.Sprintf("%s [%d/%d]", msg, e.Done, e.Total)
		}
		cliapp.Fprintf(p.w, "qualrun: %s: %s\n", e.Phase, msg)
	}
}

// startTicker prints the running row's periodic line every interval; p.mu is held.
func (p *progress) startTicker() {
	stop := make(chan struct{})
	p.stop = stop
	p.ticker.Add(1)
	go func() {
		defer p.ticker.Done()
		t := time.NewTicker(p.interval)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				p.mu.Lock()
				if p.row.running && p.stop == stop {
					el := time.Since(p.row.start).Seconds()
					cliapp.Fprintf(p.w, "qualrun: row %d/%d running: %s: %d/%d requests, %s req/s, %d failed, %s s\n",
						p.row.index, p.row.rows, p.row.name, p.row.done, p.row.total,
						numfmt.Number(float64(p.row.done)/el), p.row.failures, numfmt.Number(el))
				}
				p.mu.Unlock()
			}
		}
	}()
}

// stopTicker stops the running row's ticker, if any; p.mu is held (the ticker goroutine exits
// without it).
func (p *progress) stopTicker() {
	if p.stop != nil {
		close(p.stop)
		p.stop = nil
	}
}

func (p *progress) done() {
	if p.bar != nil {
		_ = p.bar.Finish()
	}
	if p.w != nil {
		p.mu.Lock()
		p.stopTicker()
		p.mu.Unlock()
		p.ticker.Wait()
	}
}
