package qualrun

import (
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/mattn/go-isatty"
	"github.com/qualkit/qualkit/runner/campaign"
	"github.com/schollz/progressbar/v3"
)

// progress renders campaign events on a terminal: a spinner-style bar with the current step.
// It stays silent when stderr is not a TTY or when --json is set.
type progress struct {
	mu  sync.Mutex
	bar *progressbar.ProgressBar
}

func newProgress(w io.Writer, enabled bool) *progress {
	f, ok := w.(*os.File)
	if !enabled || !ok || !isatty.IsTerminal(f.Fd()) {
		return &progress{}
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

func (p *progress) event(e campaign.Event) {
	if p.bar == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	desc := e.Phase + ": " + e.Message
	if e.Total > 0 {
		desc = fmt.Sprintf("%s [%d/%d]", desc, e.Done, e.Total)
	}
	p.bar.Describe(desc)
	_ = p.bar.Add(1)
}

func (p *progress) done() {
	if p.bar != nil {
		_ = p.bar.Finish()
	}
}
