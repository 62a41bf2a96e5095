package sim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"
	"unicode"
)

// ErrConfig marks an invalid configuration (Config.Validate, LoadConfig, ParseFault).
var ErrConfig = errors.New("invalid qualsim configuration")

// Timing is the declared timing model. Every request first waits for a decode slot; the clock of
// its tokens starts when it holds one. Token k (0-based) is generated at
//
//	slot + TTFT + PrefillPerToken*prompt_tokens + j_0 + sum over i=1..k of (TokenInterval + j_i)
//
// where each j_i is drawn uniformly from [0, Jitter) by a generator seeded from the request (so
// the same request gets the same jitter). A stall fault shifts every later token by its duration.
type Timing struct {
	// StartupDelay: from Serve until /v1/models, /health and the completion endpoints answer
	// (503 before).
	StartupDelay time.Duration
	// TTFT: from slot acquisition to the first token.
	TTFT time.Duration
	// PrefillPerToken is added to TTFT once per prompt token.
	PrefillPerToken time.Duration
	// TokenInterval: between consecutive tokens.
	TokenInterval time.Duration
	// TokensPerEvent is how many tokens one SSE content event carries after the first, which
	// always carries the first token alone (as engines send the prefill's token at once). An
	// event is sent when its last token is generated.
	TokensPerEvent int
	// Jitter is the upper bound of the seeded random delay added to TTFT and to every interval.
	Jitter time.Duration
}

// Config declares a qualsim server.
type Config struct {
	// Models are the model ids /v1/models lists and requests may name.
	Models []string
	// Seed is the model seed, one input of every completion (see Generate).
	Seed uint64
	// Timing is the declared timing model.
	Timing Timing
	// Slots is the decode-slot limit: requests beyond it queue, so TTFT grows with concurrency.
	Slots int
	// DefaultMaxTokens applies when a request gives neither max_tokens nor max_completion_tokens.
	DefaultMaxTokens int
	// EOSAfter makes the model emit end-of-sequence after this many tokens unless the request
	// sets ignore_eos (finish_reason "stop"); 0 means the model never does.
	EOSAfter int
	// RolePrelude makes a chat stream start with a role-only event ({"role":"assistant",
	// "content":""}) as soon as the request holds a slot, before the first token, as OpenAI and
	// vLLM do. It carries no content: a client that stamps TTFT on it measures too little.
	RolePrelude bool
	// ShutdownGrace bounds how long in-flight requests may run after shutdown begins; those
	// still running are then cut (the connection closes without the rest of the stream).
	ShutdownGrace time.Duration
	// PrefixCache declares the prefix cache (off by default).
	PrefixCache PrefixCache
	// Tokens, when set, counts usage with a real tokenizer instead of the documented word count
	// (docs/tokens.md): prompt_tokens is its count of the prompt (messages one a line, a non-user
	// role written "role: " before its content, with the tokenizer's BOS and space prefix), a
	// completion stops at the most whole output tokens whose returned text counts at most
	// max_tokens, and completion_tokens is the count of the returned text.
	Tokens TokenCounter
	// Reasoning declares a reasoning model (off when Tokens is 0).
	Reasoning Reasoning
	// SpecDecode declares speculative decoding's acceptance model (off when DraftTokens is 0).
	SpecDecode SpecDecode
	// ToolCalls declares a tool-calling model (off unless Enabled).
	ToolCalls ToolCalls
	// ImageTokens makes the model take images (image_url content parts holding base64 data URLs;
	// input_image on the Responses API): each counts ImageTokens prompt tokens, placed after its
	// message's text, and its bytes enter the prompt hash. 0: a text-only model, which answers a
	// request with an image 400.
	ImageTokens int
	// Faults are the misbehaviours turned on.
	Faults Faults
}

// Reasoning fields a chat delta or message can carry reasoning in: vLLM's and SGLang's reasoning
// parsers and DeepSeek use reasoning_content; vLLM since 0.10 and OpenRouter use reasoning.
const (
	ReasoningContent = "reasoning_content"
	ReasoningField   = "reasoning" // not a contract value: a chat delta key
)

// Reasoning makes the first Tokens generated tokens of every chat response reasoning: streamed as
// deltas of Field before any content delta (an event never mixes the two), returned in the
// message's Field, and counted in usage.completion_tokens_details.reasoning_tokens. They count in
// completion_tokens and against max_tokens, as vLLM's reasoning parsers count them; a completion
// shorter than Tokens is all reasoning. Completions (/v1/completions) carry no reasoning.
type Reasoning struct {
	Tokens int
	// Field is ReasoningContent (the default) or ReasoningField.
	Field string
}

// SpecDecode is a declared speculative-decoding acceptance model for the server's counters: each
// decode step proposes DraftTokens draft tokens, accepted in order, each with probability
// Acceptance, until the first rejection (drawn from a generator seeded by the request, so a
// request always counts the same); a step emits its accepted tokens and one more, and never more
// than the completion has left. The steps, the draft tokens and the accepted tokens are counted in
// qualsim_spec_decode_num_drafts_total, _num_draft_tokens_total and _num_accepted_tokens_total
// (vLLM: spec_decode_num_drafts, spec_decode_num_draft_tokens, spec_decode_num_accepted_tokens)
// when a request finishes. The timing model is not changed: acceptance shows in the counters only.
type SpecDecode struct {
	DraftTokens int
	Acceptance  float64
}

// TokenCounter counts tokens with a tokenizer (Config.Tokens); it must be safe for concurrent
// use.
type TokenCounter interface {
	// PromptTokens counts a prompt given as its messages' roles and contents (a completions
	// prompt is one user message).
	PromptTokens(roles, contents []string) (int64, error)
	// TextTokens counts a completion's text.
	TextTokens(text string) (int64, error)
}

// DefaultConfig returns the defaults the qualsim command starts from.
func DefaultConfig() Config {
	return Config{
		Models: []string{"qualsim-tiny"},
		Timing: Timing{
			TTFT:           20 * time.Millisecond,
			TokenInterval:  5 * time.Millisecond,
			TokensPerEvent: 1,
		},
		Slots:            8,
		DefaultMaxTokens: 16,
		RolePrelude:      true,
		ShutdownGrace:    5 * time.Second,
		PrefixCache:      DefaultPrefixCache,
	}
}

// Validate reports the first problem with c, wrapping ErrConfig.
func (c Config) Validate() error {
	if len(c.Models) == 0 || len(c.Models) > MaxModels {
		return fmt.Errorf("%w: need 1 to %d model ids, have %d", ErrConfig, MaxModels, len(c.Models))
	}
	seen := map[string]bool{}
	for _, m := range c.Models {
		if m == "" || len(m) > MaxModelIDBytes || strings.IndexFunc(m, func(r rune) bool { return !unicode.IsPrint(r) || r == ' ' }) >= 0 {
			return fmt.Errorf("%w: model id %q: want 1 to %d printable bytes without spaces", ErrConfig, m, MaxModelIDBytes)
		}
		if seen[m] {
			return fmt.Errorf("%w: model id %q declared twice", ErrConfig, m)
		}
		seen[m] = true
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"startup delay", c.Timing.StartupDelay}, {"ttft", c.Timing.TTFT},
		{"prefill per token", c.Timing.PrefillPerToken}, {"token interval", c.Timing.TokenInterval},
		{"jitter", c.Timing.Jitter}, {"shutdown grace", c.ShutdownGrace},
		{"slow-shutdown", c.Faults.SlowShutdown}, {"stall", c.Faults.Stall},
	} {
		if d.v < 0 || d.v > MaxDuration {
			return fmt.Errorf("%w: %s %v: want 0 to %v", ErrConfig, d.name, d.v, MaxDuration)
		}
	}
	if c.Timing.TokensPerEvent < 1 || c.Timing.TokensPerEvent > MaxTokensPerEvent {
		return fmt.Errorf("%w: tokens per event %d: want 1 to %d", ErrConfig, c.Timing.TokensPerEvent, MaxTokensPerEvent)
	}
	if c.Slots < 1 || c.Slots > MaxSlots {
		return fmt.Errorf("%w: slots %d: want 1 to %d", ErrConfig, c.Slots, MaxSlots)
	}
	if c.DefaultMaxTokens < 1 || c.DefaultMaxTokens > MaxCompletionTokens {
		return fmt.Errorf("%w: default max tokens %d: want 1 to %d", ErrConfig, c.DefaultMaxTokens, MaxCompletionTokens)
	}
	if c.EOSAfter < 0 || c.EOSAfter > MaxCompletionTokens {
		return fmt.Errorf("%w: eos after %d: want 0 to %d", ErrConfig, c.EOSAfter, MaxCompletionTokens)
	}
	if pc := c.PrefixCache; pc.Enabled {
		if pc.BlockTokens < 1 || pc.BlockTokens > MaxPrefixBlockTokens {
			return fmt.Errorf("%w: prefix cache block tokens %d: want 1 to %d", ErrConfig, pc.BlockTokens, MaxPrefixBlockTokens)
		}
		if pc.CapacityBlocks < 1 || pc.CapacityBlocks > MaxPrefixCapacityBlocks {
			return fmt.Errorf("%w: prefix cache capacity %d blocks: want 1 to %d", ErrConfig, pc.CapacityBlocks, MaxPrefixCapacityBlocks)
		}
	}
	if r := c.Reasoning; r.Tokens < 0 || r.Tokens > MaxCompletionTokens {
		return fmt.Errorf("%w: reasoning tokens %d: want 0 to %d", ErrConfig, r.Tokens, MaxCompletionTokens)
	} else if r.Field != "" && r.Field != ReasoningContent && r.Field != ReasoningField {
		return fmt.Errorf("%w: reasoning field %q: want %q or %q", ErrConfig, r.Field, ReasoningContent, ReasoningField)
	}
	if sd := c.SpecDecode; sd.DraftTokens < 0 || sd.DraftTokens > MaxDraftTokens {
		return fmt.Errorf("%w: speculative draft tokens %d: want 0 to %d", ErrConfig, sd.DraftTokens, MaxDraftTokens)
	} else if !(sd.Acceptance >= 0 && sd.Acceptance <= 1) {
		return fmt.Errorf("%w: speculative acceptance %g: want 0 to 1", ErrConfig, sd.Acceptance)
	}
	if c.ImageTokens < 0 || c.ImageTokens > MaxImageTokens {
		return fmt.Errorf("%w: image tokens %d: want 0 to %d", ErrConfig, c.ImageTokens, MaxImageTokens)
	}
	if n := c.ToolCalls.Rounds; n < 0 || n > MaxToolRounds {
		return fmt.Errorf("%w: tool-call rounds %d: want 0 to %d", ErrConfig, n, MaxToolRounds)
	}
	if a := c.ToolCalls.Accuracy; !(a >= 0 && a <= 1) {
		return fmt.Errorf("%w: tool-call accuracy %g: want 0 to 1", ErrConfig, a)
	}
	return c.Faults.validate()
}

// fileConfig is the JSON configuration file; absent fields keep the base value.
type fileConfig struct {
	Models           []string `json:"models"`
	Seed             *uint64  `json:"seed"`
	StartupDelay     *string  `json:"startup_delay"`
	TTFT             *string  `json:"ttft"`
	PrefillPerToken  *string  `json:"prefill_per_token"`
	TokenInterval    *string  `json:"token_interval"`
	TokensPerEvent   *int     `json:"tokens_per_event"`
	Jitter           *string  `json:"jitter"`
	Slots            *int     `json:"slots"`
	DefaultMaxTokens *int     `json:"default_max_tokens"`
	EOSAfter         *int     `json:"eos_after"`
	RolePrelude      *bool    `json:"role_prelude"`
	ShutdownGrace    *string  `json:"shutdown_grace"`
	PrefixCache      *struct {
		Enabled        *bool `json:"enabled"`
		BlockTokens    *int  `json:"block_tokens"`
		CapacityBlocks *int  `json:"capacity_blocks"`
	} `json:"prefix_cache"`
	Reasoning *struct {
		Tokens *int    `json:"tokens"`
		Field  *string `json:"field"`
	} `json:"reasoning"`
	ImageTokens *int `json:"image_tokens"`
	ToolCalls   *struct {
		Enabled  *bool    `json:"enabled"`
		Accuracy *float64 `json:"accuracy"`
		Rounds   *int     `json:"rounds"`
	} `json:"tool_calls"`
	SpecDecode *struct {
		DraftTokens *int     `json:"draft_tokens"`
		Acceptance  *float64 `json:"acceptance"`
	} `json:"spec_decode"`
	Faults []string `json:"faults"`
}

// LoadConfig reads a JSON configuration (at most MaxConfigBytes; unknown fields, trailing data
// and invalid durations are errors) and lays it over base: fields it has replace base's, and its
// faults are added to base's. Durations are Go duration strings ("20ms"). The result is validated.
func LoadConfig(r io.Reader, base Config) (Config, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxConfigBytes+1))
	if err != nil {
		return Config{}, fmt.Errorf("read config: %w", err)
	}
	if len(data) > MaxConfigBytes {
		return Config{}, fmt.Errorf("%w: config larger than %d bytes", ErrConfig, MaxConfigBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var fc fileConfig
	if err := dec.Decode(&fc); err != nil {
		return Config{}, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return Config{}, fmt.Errorf("%w: trailing data after the config object", ErrConfig)
	}
	c := base
	c.Models = append([]string(nil), base.Models...)
	if fc.Models != nil {
		c.Models = fc.Models
	}
	setUint(&c.Seed, fc.Seed)
	for _, d := range []struct {
		name string
		src  *string
		dst  *time.Duration
	}{
		{"startup_delay", fc.StartupDelay, &c.Timing.StartupDelay}, {"ttft", fc.TTFT, &c.Timing.TTFT},
		{"prefill_per_token", fc.PrefillPerToken, &c.Timing.PrefillPerToken},
		{"token_interval", fc.TokenInterval, &c.Timing.TokenInterval}, {"jitter", fc.Jitter, &c.Timing.Jitter},
		{"shutdown_grace", fc.ShutdownGrace, &c.ShutdownGrace},
	} {
		if d.src == nil {
			continue
		}
		v, err := time.ParseDuration(*d.src)
		if err != nil {
			return Config{}, fmt.Errorf("%w: %s: %v", ErrConfig, d.name, err)
		}
		*d.dst = v
	}
	setInt(&c.Timing.TokensPerEvent, fc.TokensPerEvent)
	setInt(&c.Slots, fc.Slots)
	setInt(&c.DefaultMaxTokens, fc.DefaultMaxTokens)
	setInt(&c.EOSAfter, fc.EOSAfter)
	if fc.RolePrelude != nil {
		c.RolePrelude = *fc.RolePrelude
	}
	if pc := fc.PrefixCache; pc != nil {
		if pc.Enabled != nil {
			c.PrefixCache.Enabled = *pc.Enabled
		}
		setInt(&c.PrefixCache.BlockTokens, pc.BlockTokens)
		setInt(&c.PrefixCache.CapacityBlocks, pc.CapacityBlocks)
	}
	if r := fc.Reasoning; r != nil {
		setInt(&c.Reasoning.Tokens, r.Tokens)
		if r.Field != nil {
			c.Reasoning.Field = *r.Field
		}
	}
	if sd := fc.SpecDecode; sd != nil {
		setInt(&c.SpecDecode.DraftTokens, sd.DraftTokens)
		if sd.Acceptance != nil {
			c.SpecDecode.Acceptance = *sd.Acceptance
		}
	}
	setInt(&c.ImageTokens, fc.ImageTokens)
	if tc := fc.ToolCalls; tc != nil {
		if tc.Enabled != nil {
			c.ToolCalls.Enabled = *tc.Enabled
		}
		if tc.Accuracy != nil {
			c.ToolCalls.Accuracy = *tc.Accuracy
		}
		setInt(&c.ToolCalls.Rounds, tc.Rounds)
	}
	for _, spec := range fc.Faults {
		if err := c.Faults.Set(spec); err != nil {
			return Config{}, err
		}
	}
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

func setInt(dst *int, src *int) {
	if src != nil {
		*dst = *src
	}
}

func setUint(dst *uint64, src *uint64) {
	if src != nil {
		*dst = *src
	}
}

// ErrNotLoopback marks a listen address off the loopback interface.
var ErrNotLoopback = errors.New("not a loopback address")

// CheckLoopback accepts "HOST:PORT" where HOST is "localhost" or an IP address in 127.0.0.0/8 or
// ::1; qualsim never serves anything else.
func CheckLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("listen address %q: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	host, _, _ = strings.Cut(host, "%")
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("listen address %q: %w (qualsim serves only 127.0.0.0/8, ::1 or localhost)", addr, ErrNotLoopback)
}
