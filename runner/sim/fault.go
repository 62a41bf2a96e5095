package sim

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// DefaultFaultEvent is the SSE event an event fault hits when its spec has no @EVENT.
const DefaultFaultEvent = 2

// Faults are the misbehaviours a server carries out. The zero value is a well-behaved server.
// Event faults name the 1-based index of an SSE event in a stream as written: the role prelude,
// content events, the finish event, the usage event and [DONE] all count. They apply to every
// streamed response; non-streamed responses see only the usage faults and the HTTP faults.
type Faults struct {
	// ExitBeforeReady: Serve returns ErrExitBeforeReady when the startup delay ends, before
	// /v1/models ever answers 200.
	ExitBeforeReady bool
	// NeverReady: /v1/models, /health and the completion endpoints answer 503 forever.
	NeverReady bool
	// ModelsWithoutID: /v1/models answers 200 with a list that lacks every declared id
	// (one decoy model, "qualsim-decoy"); completions for the declared ids still work.
	ModelsWithoutID bool
	// SlowModels: /v1/models waits this long before it answers (the wait ends early when the
	// client goes away); 0 is off.
	SlowModels time.Duration
	// CrashAfterEvents: once any stream has flushed this many events, the server crashes (see
	// WithCrash); 0 is off.
	CrashAfterEvents int
	// IgnoreSIGTERM: carried out by the qualsim command, which ignores SIGTERM and SIGINT, so
	// only SIGKILL ends it.
	IgnoreSIGTERM bool
	// SlowShutdown: shutdown ends no earlier than this long after it began (in-flight streams
	// keep running meanwhile, within ShutdownGrace).
	SlowShutdown time.Duration
	// SetsidGrandchild: carried out by the qualsim command, which starts a copy of itself in a
	// new session (setsid) that keeps running after qualsim exits.
	SetsidGrandchild bool
	// GrandchildKeepsListener: like SetsidGrandchild, and the grandchild inherits the listening
	// socket and serves on it after qualsim exits.
	GrandchildKeepsListener bool
	// MalformedJSONAt: event MalformedJSONAt carries only the first half of its payload
	// (invalid JSON); 0 is off.
	MalformedJSONAt int
	// MissingDataPrefixAt: event MissingDataPrefixAt is written without "data: ", which an SSE
	// parser ignores as an unknown field line; 0 is off.
	MissingDataPrefixAt int
	// MissingUsage: no usage record, even when stream_options.include_usage asks for one, and
	// no "usage" in non-streamed responses.
	MissingUsage bool
	// InconsistentUsage: usage.total_tokens is prompt_tokens + completion_tokens + 1.
	InconsistentUsage bool
	// UsageExceedsMaxTokens: usage.completion_tokens is reported as max_tokens × 1,000,000
	// (total_tokens stays prompt + completion), an impossible count.
	UsageExceedsMaxTokens bool
	// UsageZeroCompletion: usage.completion_tokens is reported as 0 (total_tokens = prompt_tokens)
	// while the content is sent as usual, an impossible count.
	UsageZeroCompletion bool
	// UsageOffByOne: usage.completion_tokens is reported one more than generated (total_tokens
	// stays prompt + completion), a plausible count only a client-side token ledger catches
	// (docs/tokens.md).
	UsageOffByOne bool
	// UsageAbsurdPrompt: usage.prompt_tokens is reported as 2^62 (total_tokens consistent), a
	// count no request body can stand for.
	UsageAbsurdPrompt bool
	// UsageBeforeContent: a stream's usage record is sent as its first event, before any content,
	// instead of after the finish.
	UsageBeforeContent bool
	// ContentAfterFinish: streams send one more content event after the finish event.
	ContentAfterFinish bool
	// DuplicateFinishReason: streams send the finish event twice.
	DuplicateFinishReason bool
	// NoDone: streams end without "data: [DONE]" (the HTTP response still ends cleanly).
	NoDone bool
	// Stall and StallAt: before writing event StallAt the stream waits Stall, and every later
	// event is shifted by it; StallAt 0 is off.
	Stall   time.Duration
	StallAt int
	// HugeEventBytes and HugeEventAt: event HugeEventAt (a JSON event) gets a
	// "qualsim_padding" string field so that its data line is at least HugeEventBytes long; its
	// content is unchanged. HugeEventAt 0 is off.
	HugeEventBytes int
	HugeEventAt    int
	// HTTP429 and HTTP500: the fraction of completion requests answered 429 (with Retry-After:
	// 1) or 500 with an OpenAI error body. The choice is a seeded hash of the model seed and the
	// request's arrival number, so it is the same in every run.
	HTTP429 float64
	HTTP500 float64
}

// FaultInfo describes one fault of the catalogue.
type FaultInfo struct {
	Name    string // the name in a spec
	Syntax  string // the spec's form
	Process bool   // carried out by the qualsim command rather than by Serve
	Doc     string // one line
}

type faultDef struct {
	FaultInfo
	value string // "" (no value), "int", "duration", "bytes", "fraction"
	event bool   // accepts @EVENT
	set   func(f *Faults, v value, at int)
}

type value struct {
	n int
	d time.Duration
	f float64
}

var faultTable = []faultDef{
	{FaultInfo{"exit-before-ready", "exit-before-ready", false, "exit (code 3) when the startup delay ends, before /v1/models ever answers 200"}, "", false,
		func(f *Faults, _ value, _ int) { f.ExitBeforeReady = true }},
	{FaultInfo{"never-ready", "never-ready", false, "listen, but answer 503 on /v1/models, /health and completions forever"}, "", false,
		func(f *Faults, _ value, _ int) { f.NeverReady = true }},
	{FaultInfo{"models-without-id", "models-without-id", false, "/v1/models answers 200 listing only \"qualsim-decoy\", not the declared ids"}, "", false,
		func(f *Faults, _ value, _ int) { f.ModelsWithoutID = true }},
	{FaultInfo{"slow-models", "slow-models=DURATION", false, "/v1/models waits DURATION before it answers (a readiness probe that times out)"}, "duration", false,
		func(f *Faults, v value, _ int) { f.SlowModels = v.d }},
	{FaultInfo{"crash-after-events", "crash-after-events=N", false, "exit (code 3) at once, mid-response, when any stream has flushed N events"}, "int", false,
		func(f *Faults, v value, _ int) { f.CrashAfterEvents = v.n }},
	{FaultInfo{"ignore-sigterm", "ignore-sigterm", true, "ignore SIGTERM and SIGINT; only SIGKILL ends the process"}, "", false,
		func(f *Faults, _ value, _ int) { f.IgnoreSIGTERM = true }},
	{FaultInfo{"slow-shutdown", "slow-shutdown=DURATION", false, "on SIGTERM, stop accepting but exit 0 only DURATION later"}, "duration", false,
		func(f *Faults, v value, _ int) { f.SlowShutdown = v.d }},
	{FaultInfo{"setsid-grandchild", "setsid-grandchild", true, "start a grandchild in a new session (setsid) that outlives qualsim"}, "", false,
		func(f *Faults, _ value, _ int) { f.SetsidGrandchild = true }},
	{FaultInfo{"grandchild-keeps-listener", "grandchild-keeps-listener", true, "the setsid grandchild inherits the listening socket and serves on it after qualsim exits"}, "", false,
		func(f *Faults, _ value, _ int) { f.GrandchildKeepsListener = true }},
	{FaultInfo{"malformed-json", "malformed-json[@EVENT]", false, "event EVENT carries only the first half of its JSON"}, "", true,
		func(f *Faults, _ value, at int) { f.MalformedJSONAt = at }},
	{FaultInfo{"missing-data-prefix", "missing-data-prefix[@EVENT]", false, "event EVENT is written without \"data: \""}, "", true,
		func(f *Faults, _ value, at int) { f.MissingDataPrefixAt = at }},
	{FaultInfo{"missing-usage", "missing-usage", false, "no usage record, even with stream_options.include_usage; no usage in non-streamed bodies"}, "", false,
		func(f *Faults, _ value, _ int) { f.MissingUsage = true }},
	{FaultInfo{"inconsistent-usage", "inconsistent-usage", false, "usage.total_tokens = prompt_tokens + completion_tokens + 1"}, "", false,
		func(f *Faults, _ value, _ int) { f.InconsistentUsage = true }},
	{FaultInfo{"usage-exceeds-max-tokens", "usage-exceeds-max-tokens", false, "usage.completion_tokens = max_tokens × 1000000 (total_tokens consistent)"}, "", false,
		func(f *Faults, _ value, _ int) { f.UsageExceedsMaxTokens = true }},
	{FaultInfo{"usage-zero-completion", "usage-zero-completion", false, "usage.completion_tokens = 0 (total_tokens = prompt_tokens) while the content is sent"}, "", false,
		func(f *Faults, _ value, _ int) { f.UsageZeroCompletion = true }},
	{FaultInfo{"usage-off-by-one", "usage-off-by-one", false, "usage.completion_tokens = the tokens generated + 1 (total_tokens consistent): plausible, caught only by a client-side token ledger"}, "", false,
		func(f *Faults, _ value, _ int) { f.UsageOffByOne = true }},
	{FaultInfo{"usage-absurd-prompt", "usage-absurd-prompt", false, "usage.prompt_tokens = 2^62 (total_tokens consistent)"}, "", false,
		func(f *Faults, _ value, _ int) { f.UsageAbsurdPrompt = true }},
	{FaultInfo{"usage-before-content", "usage-before-content", false, "streams send their usage record first, before any content, not after the finish"}, "", false,
		func(f *Faults, _ value, _ int) { f.UsageBeforeContent = true }},
	{FaultInfo{"content-after-finish", "content-after-finish", false, "streams send one more content event after the finish event"}, "", false,
		func(f *Faults, _ value, _ int) { f.ContentAfterFinish = true }},
	{FaultInfo{"duplicate-finish-reason", "duplicate-finish-reason", false, "streams send the finish event twice"}, "", false,
		func(f *Faults, _ value, _ int) { f.DuplicateFinishReason = true }},
	{FaultInfo{"no-done", "no-done", false, "streams end cleanly but without data: [DONE]"}, "", false,
		func(f *Faults, _ value, _ int) { f.NoDone = true }},
	{FaultInfo{"stall", "stall=DURATION[@EVENT]", false, "wait DURATION before event EVENT; later events shift by DURATION"}, "duration", true,
		func(f *Faults, v value, at int) { f.Stall, f.StallAt = v.d, at }},
	{FaultInfo{"huge-event", "huge-event=BYTES[@EVENT]", false, "pad JSON event EVENT so that its data line is at least BYTES long (suffix KiB or MiB allowed)"}, "bytes", true,
		func(f *Faults, v value, at int) { f.HugeEventBytes, f.HugeEventAt = v.n, at }},
	{FaultInfo{"http-429", "http-429=FRACTION", false, "answer FRACTION of completion requests 429 with Retry-After: 1 (seeded choice)"}, "fraction", false,
		func(f *Faults, v value, _ int) { f.HTTP429 = v.f }},
	{FaultInfo{"http-500", "http-500=FRACTION", false, "answer FRACTION of completion requests 500 (seeded choice)"}, "fraction", false,
		func(f *Faults, v value, _ int) { f.HTTP500 = v.f }},
}

// FaultCatalogue lists every fault ParseFault knows, in documentation order.
func FaultCatalogue() []FaultInfo {
	out := make([]FaultInfo, len(faultTable))
	for i, d := range faultTable {
		out[i] = d.FaultInfo
	}
	return out
}

// Set turns on the fault named by spec, "NAME[=VALUE][@EVENT]" (see FaultCatalogue). Several
// faults combine; setting one twice keeps the last value. Errors wrap ErrConfig.
func (f *Faults) Set(spec string) error {
	body, atText, hasAt := cutLast(spec, '@')
	name, val, hasVal := strings.Cut(body, "=")
	var def *faultDef
	for i := range faultTable {
		if faultTable[i].Name == name {
			def = &faultTable[i]
		}
	}
	if def == nil {
		return fmt.Errorf("%w: fault %q: unknown name %q (see qualsim --help)", ErrConfig, spec, name)
	}
	if hasAt && !def.event {
		return fmt.Errorf("%w: fault %q: %s takes no @EVENT", ErrConfig, spec, name)
	}
	at := DefaultFaultEvent
	if hasAt {
		n, err := strconv.Atoi(atText)
		if err != nil || n < 1 {
			return fmt.Errorf("%w: fault %q: EVENT %q: want an integer >= 1", ErrConfig, spec, atText)
		}
		at = n
	}
	if def.value == "" && hasVal {
		return fmt.Errorf("%w: fault %q: %s takes no value", ErrConfig, spec, name)
	}
	if def.value != "" && !hasVal {
		return fmt.Errorf("%w: fault %q: want %s", ErrConfig, spec, def.Syntax)
	}
	v, err := parseFaultValue(def.value, val)
	if err != nil {
		return fmt.Errorf("%w: fault %q: %v", ErrConfig, spec, err)
	}
	def.set(f, v, at)
	return f.validate()
}

func cutLast(s string, sep byte) (before, after string, found bool) {
	if i := strings.LastIndexByte(s, sep); i >= 0 {
		return s[:i], s[i+1:], true
	}
	return s, "", false
}

func parseFaultValue(kind, s string) (value, error) {
	var v value
	switch kind {
	case "int":
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return v, fmt.Errorf("%q: want an integer >= 1", s)
		}
		v.n = n
	case "duration":
		d, err := time.ParseDuration(s)
		if err != nil || d < 0 || d > MaxDuration {
			return v, fmt.Errorf("%q: want a duration from 0 to %v", s, MaxDuration)
		}
		v.d = d
	case "bytes":
		mult, num := 1, s
		switch {
		case strings.HasSuffix(s, "MiB"):
			mult, num = 1<<20, strings.TrimSuffix(s, "MiB")
		case strings.HasSuffix(s, "KiB"):
			mult, num = 1<<10, strings.TrimSuffix(s, "KiB")
		}
		n, err := strconv.Atoi(num)
		if err != nil || n < 1 || n > MaxHugeEventBytes/mult {
			return v, fmt.Errorf("%q: want 1 to %d bytes", s, MaxHugeEventBytes)
		}
		v.n = n * mult
	case "fraction":
		x, err := strconv.ParseFloat(s, 64)
		if err != nil || !(x >= 0 && x <= 1) {
			return v, fmt.Errorf("%q: want a fraction from 0 to 1", s)
		}
		v.f = x
	}
	return v, nil
}

func (f Faults) validate() error {
	if f.HTTP429+f.HTTP500 > 1 {
		return fmt.Errorf("%w: http-429 and http-500 fractions add up to more than 1", ErrConfig)
	}
	if f.ExitBeforeReady && f.NeverReady {
		return fmt.Errorf("%w: exit-before-ready and never-ready exclude each other", ErrConfig)
	}
	return nil
}

// Specs returns the faults turned on in f as specs that Set accepts, in catalogue order.
func (f Faults) Specs() []string {
	var out []string
	add := func(cond bool, s string) {
		if cond {
			out = append(out, s)
		}
	}
	add(f.ExitBeforeReady, "exit-before-ready")
	add(f.NeverReady, "never-ready")
	add(f.ModelsWithoutID, "models-without-id")
	add(f.SlowModels > 0, "slow-models="+f.SlowModels.String())
	add(f.CrashAfterEvents > 0, fmt.Sprintf("crash-after-events=%d", f.CrashAfterEvents))
	add(f.IgnoreSIGTERM, "ignore-sigterm")
	add(f.SlowShutdown > 0, "slow-shutdown="+f.SlowShutdown.String())
	add(f.SetsidGrandchild, "setsid-grandchild")
	add(f.GrandchildKeepsListener, "grandchild-keeps-listener")
	add(f.MalformedJSONAt > 0, fmt.Sprintf("malformed-json@%d", f.MalformedJSONAt))
	add(f.MissingDataPrefixAt > 0, fmt.Sprintf("missing-data-prefix@%d", f.MissingDataPrefixAt))
	add(f.MissingUsage, "missing-usage")
	add(f.InconsistentUsage, "inconsistent-usage")
	add(f.UsageOffByOne, "usage-off-by-one")
	add(f.NoDone, "no-done")
	add(f.StallAt > 0, fmt.Sprintf("stall=%v@%d", f.Stall, f.StallAt))
	add(f.HugeEventAt > 0, fmt.Sprintf("huge-event=%d@%d", f.HugeEventBytes, f.HugeEventAt))
	add(f.HTTP429 > 0, "http-429="+strconv.FormatFloat(f.HTTP429, 'g', -1, 64))
	add(f.HTTP500 > 0, "http-500="+strconv.FormatFloat(f.HTTP500, 'g', -1, 64))
	return out
}
