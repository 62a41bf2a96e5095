package campaign

import (
	"fmt"
	"time"

	"github.com/qualkit/qualkit/runner/load"
)

// servingProgress turns the load generator's progress of serving case caseID (rows rows in all)
// into campaign events: row_start (Done: rows started so far), requests (0 of the row's
// measured requests at its start, then each one that ended) and row_done (Done/Total: the row's measured requests, Failures: those that
// failed). Nil when nobody listens.
func (c *Config) servingProgress(caseID string, rows int) func(load.Progress) {
	if c.Progress == nil {
		return nil
	}
	started := 0 // load.Run runs rows one after another: row_start is never concurrent
	return func(p load.Progress) {
		name := fmt.Sprintf("%s c=%d r=%d", caseID, p.Concurrency, p.Repetition)
		switch p.Kind {
		case load.ProgressRowStart:
			started++
			msg := fmt.Sprintf("%s: %d measured requests", name, p.Total)
			if p.Rounds > 0 {
				msg = fmt.Sprintf("%s: %d measured user turns, each followed by up to %d tool rounds", name, p.Total, p.Rounds)
			}
			c.Progress(Event{Phase: "row_start", Message: msg, Done: started, Total: rows})
			c.Progress(Event{Phase: "requests", Message: name, Done: 0, Total: int(p.Total)})
		case load.ProgressRequest:
			c.Progress(Event{Phase: "requests", Message: name, Done: int(p.Done), Total: int(p.Total), Failures: int(p.Failed)})
		case load.ProgressRowDone:
			c.Progress(Event{Phase: "row_done", Message: name, Done: int(p.Done), Total: int(p.Total), Failures: int(p.Failed)})
		}
	}
}

// synthesisEvery is the most often a prompt synthesis reports its progress.
const synthesisEvery = 250 * time.Millisecond

// synthesisProgress reports the token-exact synthesis of serving case caseID's prompts as
// preflight events ("synthesising prompts: case ID", Done/Total entries): the first entry, then
// at most every synthesisEvery, and the last. Nil when nobody listens.
func (p *Plan) synthesisProgress(caseID string) func(done, total int) {
	if p.cfg.Progress == nil {
		return nil
	}
	var last time.Time
	return func(done, total int) {
		if done > 1 && done < total && time.Since(last) < synthesisEvery {
			return
		}
		last = time.Now()
		p.cfg.progress("preflight", "synthesising prompts: case "+caseID, done, total)
	}
}
