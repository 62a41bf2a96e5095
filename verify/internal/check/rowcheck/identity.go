package rowcheck

import (
	"slices"

	"github.com/qualkit/qualkit/schemas"
	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/metric"
	"github.com/qualkit/qualkit/verify/internal/finding"
	"github.com/qualkit/qualkit/verify/internal/reason"
	"github.com/qualkit/qualkit/verify/internal/record"
)

// RowIdentity checks the identity the runner gives each request of a row (runner/load's rowPlan):
// indexes are fixed before the row starts, the warmups first (index w asks the runner's warmup
// prompt metric.WarmupPromptID(w)), then a warm case's priming pass, then the measured requests; no
// index repeats, and a row that ran to its planned end (no ended, not a session row) sent
// indexes 0..n-1. Warmups and priming run to completion before the
// first measured request is scheduled, and the warmups before the first priming request. On
// 38f126b a re-signed record with another index or a warmup with another prompt id verified.
func RowIdentity(c *finding.Collector, row contract.Row, wc *contract.Case, recs []*record.Record) {
	if len(recs) == 0 {
		return
	}
	requestExtras(c, row, wc, recs)
	path := row.Records.Path
	sorted := slices.Clone(recs)
	slices.SortStableFunc(sorted, func(a, b *record.Record) int { return CmpInt(a.Index, b.Index) })
	sessions := false
	for k, r := range sorted {
		sessions = sessions || r.Session != nil
		if k > 0 && sorted[k-1].Index == r.Index {
			c.Add(path, finding.Pointer(r.Line, "index"), reason.ErrRowMismatch, "row c%d-r%d: index %d is recorded twice (lines %d and %d)", row.Concurrency, row.Repetition, r.Index, sorted[k-1].Line+1, r.Line+1)
			return
		}
	}
	// A row that ran to its planned end sent every planned request: its indexes are 0..n-1. A row
	// a duration or stop rule ended (ended) may not: a worker that took index i after the rule
	// fired sends nothing while one that took i+1 just before may have sent, and a cut session
	// leaves gaps.
	if !sessions && row.Ended == nil {
		for k, r := range sorted {
			if r.Index != int64(k) {
				c.Add(path, finding.Pointer(r.Line, "index"), reason.ErrRowMismatch, "row c%d-r%d: the row's %d requests have indexes up to %d, the runner numbers the requests it sends 0..%d", row.Concurrency, row.Repetition, len(sorted), sorted[len(sorted)-1].Index, len(sorted)-1)
				return
			}
		}
	}
	// The phases, in the order the runner runs them: warmups, priming, measured.
	phase := func(r *record.Record) int {
		switch {
		case r.Warmup && !r.Priming:
			return 0
		case r.Warmup:
			return 1
		}
		return 2
	}
	for k, r := range sorted {
		if k > 0 && phase(sorted[k-1]) > phase(r) {
			c.Add(path, finding.Pointer(r.Line, "index"), reason.ErrRowMismatch, "row c%d-r%d: request %d (%s) comes after request %d (%s): the runner numbers warmups, then priming, then measured requests", row.Concurrency, row.Repetition, r.Index, phaseName[phase(r)], sorted[k-1].Index, phaseName[phase(sorted[k-1])])
			return
		}
		if phase(r) == 0 {
			if want := metric.WarmupPromptID(r.Index); r.PromptID != want {
				c.Add(path, finding.Pointer(r.Line, "prompt_id"), reason.ErrRowMismatch, "row c%d-r%d: warmup %d asks %s, the runner's warmup prompt %d is %s", row.Concurrency, row.Repetition, r.Index, r.PromptID, r.Index, want)
			}
			if wc != nil && r.Index >= wc.WarmupRequests {
				c.Add(path, finding.Pointer(r.Line, "index"), reason.ErrRowMismatch, "row c%d-r%d: warmup %d, the case declares %d warmup requests", row.Concurrency, row.Repetition, r.Index, wc.WarmupRequests)
			}
		}
	}
	// Each phase ends before the next begins.
	var last [3]int64
	var has [3]bool
	for _, r := range sorted {
		p := phase(r)
		for q := range p {
			if has[q] && r.Sched < last[q] {
				c.Add(path, finding.Pointer(r.Line, "t_sched_ns"), reason.ErrRowMismatch, "row c%d-r%d: %s request %d is scheduled at %d ns, before the row's %s requests ended at %d ns: the runner runs them to completion first", row.Concurrency, row.Repetition, phaseName[p], r.Index, r.Sched, phaseName[q], last[q])
				return
			}
		}
		end := max(r.Sched, r.Send, r.Header, r.End, r.Close)
		if len(r.Content) > 0 {
			end = max(end, r.Content[len(r.Content)-1])
		}
		last[p], has[p] = max(last[p], end), true
	}
}

var phaseName = [3]string{"warmup", "priming", "measured"}

// seedLimit bounds a request's sampling seed: the runner sends (sampling.seed + index) mod 2^53
// (runner/load requestSeed), an integer every JSON reader holds exactly.
const seedLimit = 1 << 53

// requestExtras checks what each record says of its request beyond its times and tokens (its
// status, seed and assertion kinds): its sampling seed is the case's seed plus its index (mod 2^53; null
// when the case declares none), a success answered 2xx (the runner fails any other answer:
// http_status), and its assertions are the case's declared response assertions in order
// (an exact_text one only for its prompt), for a measured request that succeeded or failed an
// assertion, and none for a warmup or any other failure. On 38f126b a re-signed seed, status
// or assertion list verified.
func requestExtras(c *finding.Collector, row contract.Row, wc *contract.Case, recs []*record.Record) {
	path := row.Records.Path
	var declared []contract.OutputAssertion
	if wc != nil {
		declared = wc.OutputAssertions
	}
	// The kinds a measured request carries are the same for every request unless an exact_text
	// assertion names a prompt: then they are found per request.
	perPrompt := false
	for _, a := range declared {
		perPrompt = perPrompt || a.Kind == contract.ResponseAssertionKindExactText && a.PromptID != ""
	}
	common := declaredKinds(declared, "")
	commonKinds := record.AssertionKinds(common)
	for _, r := range recs {
		if wc != nil {
			switch sp := wc.Sampling; {
			case (sp == nil || sp.Seed == nil) && r.HasSeed:
				c.Add(path, finding.Pointer(r.Line, "seed"), reason.ErrRowMismatch, "request %d carries seed %d, the case declares no sampling seed", r.Index, r.Seed)
			case sp != nil && sp.Seed != nil:
				want := int64((uint64(*sp.Seed) + uint64(r.Index)) % seedLimit)
				if !r.HasSeed || r.Seed != want {
					c.Add(path, finding.Pointer(r.Line, "seed"), reason.ErrRowMismatch, "request %d carries seed %s, the case's sampling seed %d plus its index is %d", r.Index, optInt(r.Seed, r.HasSeed), *sp.Seed, want)
				}
			}
		}
		if !r.Failed {
			if !r.HasStatus || r.Status < 200 || r.Status > 299 {
				c.Add(path, finding.Pointer(r.Line, "status_code"), reason.ErrRequestFailed, "request %d is recorded as a success with HTTP status %s: the runner fails any answer but 2xx (http_status)", r.Index, optInt(r.Status, r.HasStatus))
			}
		}
		if wc == nil {
			continue
		}
		var want []contract.AssertionOutcomeKind
		var w string
		switch {
		case r.Warmup || r.Failed && r.ErrClass != string(contract.ErrorClassAssertion):
		case perPrompt:
			want = declaredKinds(declared, r.PromptID)
			w = record.AssertionKinds(want)
		default:
			want, w = common, commonKinds
		}
		if r.Assertions != w {
			c.Add(path, finding.Pointer(r.Line, "assertions"), reason.ErrRowMismatch, "request %d records %d assertions, the case's declared assertions give it %d %v", r.Index, len(r.Assertions), len(want), want)
		}
	}
}

// declaredKinds are the kinds of the assertion outcomes a measured request of prompt promptID
// carries: the case's declared response assertions in order, an exact_text one only for its
// prompt, at most maxAssertions.
func declaredKinds(declared []contract.OutputAssertion, promptID string) []contract.AssertionOutcomeKind {
	var want []contract.AssertionOutcomeKind
	for _, a := range declared {
		if a.Kind == contract.ResponseAssertionKindExactText && a.PromptID != "" && a.PromptID != promptID {
			continue
		}
		if len(want) < maxAssertions {
			want = append(want, contract.AssertionOutcomeKind(a.Kind))
		}
	}
	return want
}

// maxAssertions is how many assertion outcomes a request record holds (the contract's limit,
// which the runner's check stops at).
var maxAssertions = int(schemas.MustBoundsOf(contract.RequestRecord).IntLimit("assertions", "maxItems"))

func optInt(v int64, has bool) string {
	if !has {
		return "null"
	}
	return record.Itoa(v)
}
