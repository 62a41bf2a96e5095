package sim

import (
	"encoding/binary"
	"hash/fnv"
	"strings"

	"github.com/qualkit/qualkit/schemas/synth"
)

// The token model. One output token is TokenWidth bytes: five zero-padded decimal digits and a
// space ("00042 "). A completion counts up from a start derived from the seeds and the prompt,
// modulo 100000.
const (
	// TokenWidth is the size in bytes of one output token.
	TokenWidth = 6
	// tokenModulus is the count of distinct token texts.
	tokenModulus = 100000
	// PromptBOSTokens is added once to every prompt count (the begin-of-sequence token).
	PromptBOSTokens = 1
	// MessageOverheadTokens is added per chat message (role marker, start and end of turn).
	MessageOverheadTokens = 3
)

// Finish reasons.
const (
	FinishLength = "length"
	FinishStop   = "stop"
)

// Message is one chat message: its role, its text (content parts joined by "\n") and the sha256
// hex digests of its images, in order.
type Message struct {
	Role    string
	Content string
	Images  []string
}

// Prompt is what a request asks the model to continue: Text for /v1/completions, Messages for
// /v1/chat/completions.
type Prompt struct {
	Chat     bool
	Text     string
	Messages []Message
	// ImageTokens is what one image counts (Config.ImageTokens).
	ImageTokens int
}

// Tokens is the documented prompt token count: for a completion prompt, PromptBOSTokens plus its
// whitespace-separated words; for chat, PromptBOSTokens plus, per message, MessageOverheadTokens
// plus the words of its content. Words are what strings.Fields returns.
func (p Prompt) Tokens() int {
	if !p.Chat {
		return PromptBOSTokens + synth.TextFields(p.Text)
	}
	n := PromptBOSTokens
	for _, m := range p.Messages {
		n += MessageOverheadTokens + synth.TextFields(m.Content) + len(m.Images)*p.ImageTokens
	}
	return n
}

// Images counts the prompt's images.
func (p Prompt) Images() int {
	n := 0
	for _, m := range p.Messages {
		n += len(m.Images)
	}
	return n
}

// GenSpec is everything a completion depends on.
type GenSpec struct {
	ModelSeed   uint64
	RequestSeed uint64 // the request's "seed"; 0 when absent
	Prompt      Prompt
	MaxTokens   int      // >= 1
	Stop        []string // stop strings; empty ones are ignored
	IgnoreEOS   bool     // the request's "ignore_eos"
	EOSAfter    int      // the model emits end-of-sequence after this many tokens; 0: never
}

// Generation is a completion: the text returned, the tokens generated and why generation ended.
type Generation struct {
	// Start is the integer of the first token.
	Start int
	// Text is the completion text as returned: whole tokens, cut before a matched stop string.
	Text string
	// Tokens is usage.completion_tokens: every token generated, including the one that completed
	// a stop string (whose text is not returned).
	Tokens int
	// Finish is FinishLength (max_tokens reached) or FinishStop (a stop string matched, or
	// end-of-sequence without ignore_eos).
	Finish string

	hash uint64 // the prompt hash, which also seeds the request's jitter
}

// Generate computes the completion for spec. It is a pure function: token k is the zero-padded
// (Start+k) mod 100000 followed by a space, where Start = splitmix64(fnv1a64(modelSeed as 8
// little-endian bytes, requestSeed likewise, then "text\x00"+prompt, or "chat\x00" and each
// message as role+"\x00"+content+"\x00")) mod 100000. Generation runs to MaxTokens (finish
// "length"), or to EOSAfter tokens when EOSAfter > 0, EOSAfter < MaxTokens and IgnoreEOS is false
// (finish "stop"), or until a stop string has appeared (finish "stop"; the text ends where the
// first-completed stop string begins), whichever comes first.
func Generate(spec GenSpec) Generation {
	seed := promptHash(spec.ModelSeed, spec.RequestSeed, spec.Prompt)
	g := Generation{Start: int(splitmix64(seed) % tokenModulus), Finish: FinishLength, hash: seed}
	limit := max(spec.MaxTokens, 0)
	if spec.EOSAfter > 0 && spec.EOSAfter < limit && !spec.IgnoreEOS {
		limit = spec.EOSAfter
		g.Finish = FinishStop
	}
	buf := make([]byte, limit*TokenWidth)
	for k := range limit {
		putToken(buf[k*TokenWidth:], (g.Start+k)%tokenModulus)
	}
	g.Text, g.Tokens = string(buf), limit
	bestTok, bestIdx := -1, -1
	for _, s := range spec.Stop {
		if s == "" {
			continue
		}
		i := strings.Index(g.Text, s)
		if i < 0 {
			continue
		}
		tok := (i + len(s) + TokenWidth - 1) / TokenWidth // the token whose text completes the stop
		if bestTok < 0 || tok < bestTok || (tok == bestTok && i < bestIdx) {
			bestTok, bestIdx = tok, i
		}
	}
	if bestTok >= 0 {
		g.Text, g.Tokens, g.Finish = g.Text[:bestIdx], bestTok, FinishStop
	}
	return g
}

// TokenText returns the text of token k of g as returned to the client: the token's bytes, cut
// where the returned text ends ("" past it).
func (g Generation) TokenText(k int) string {
	return g.span(k, k+1)
}

// span returns the returned text of tokens [from, to).
func (g Generation) span(from, to int) string {
	a, b := min(from*TokenWidth, len(g.Text)), min(to*TokenWidth, len(g.Text))
	return g.Text[a:b]
}

func putToken(b []byte, v int) {
	for i := 4; i >= 0; i-- {
		b[i] = byte('0' + v%10)
		v /= 10
	}
	b[5] = ' '
}

func promptHash(modelSeed, requestSeed uint64, p Prompt) uint64 {
	h := fnv.New64a()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], modelSeed)
	h.Write(b[:])
	binary.LittleEndian.PutUint64(b[:], requestSeed)
	h.Write(b[:])
	if !p.Chat {
		h.Write([]byte("text\x00"))
		h.Write([]byte(p.Text))
		return h.Sum64()
	}
	h.Write([]byte("chat\x00"))
	for _, m := range p.Messages {
		h.Write([]byte(m.Role))
		h.Write([]byte{0})
		h.Write([]byte(m.Content))
		h.Write([]byte{0})
		for _, d := range m.Images {
			h.Write([]byte("\x00img:" + d))
		}
	}
	return h.Sum64()
}

// splitmix64 is the SplitMix64 finalizer: a bijective mix of x.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// unitFloat maps x to [0, 1) with 53 bits.
func unitFloat(x uint64) float64 {
	return float64(x>>11) / (1 << 53)
}
