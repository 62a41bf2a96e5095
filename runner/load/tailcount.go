package load

import (
	"context"
	"strings"

	"github.com/qualkit/qualkit/schemas/metric"
)

// Token-exact synthesis counts a prompt after each block or word it adds. Counting the whole
// prompt every time costs O(length) per count, O(length²) per prompt (a 126k-token Mooncake
// entry took minutes). tailCounter counts a text that extends one it already counted (an
// anchor, A) by counting only the new suffix x after A's tail T (A's last words, from a word
// start at least tailBytes before its end):
//
//	count(A + x) = count(A) + count(T + x) − count(T)
//
// which is exact for a tokenizer whose tokens never span a space followed by a word (what a
// BPE tokenizer with whitespace pre-tokenization, or SentencePiece's ▁-initial pieces, give),
// under any template whose rendering puts the text in one place. The counts, and so every
// decision the synthesis takes and the bytes it writes, are then those of counting whole
// prompts. A tokenizer that is not local (a test tokenizer counting bytes in thirds) is found by
// probeLocal and counted whole; a prompt whose fast synthesis does not count exactly its target
// is synthesised again counting whole prompts.

// tailBytes is the least length of an anchor's tail, and reanchorBytes the suffix length past
// which a derived count becomes an anchor itself (so a prompt grown block by block is counted
// once, not once per block).
const (
	tailBytes     = 64
	reanchorBytes = 1024
	maxAnchors    = 4
)

type countAnchor struct {
	text  string
	n     int64
	tail  string // "" when the text is too short to have one
	tailN int64
}

// tailCounter counts prompts with full (a whole prompt's count), deriving counts of texts that
// extend a recent anchor when local. It checks ctx before every count. Not safe for concurrent
// use: one per prompt being synthesised.
type tailCounter struct {
	ctx     context.Context
	full    func(string) (int64, error)
	local   bool
	anchors []countAnchor // most recent first
}

func newTailCounter(ctx context.Context, full func(string) (int64, error), local bool) *tailCounter {
	return &tailCounter{ctx: ctx, full: full, local: local}
}

// count counts s (derived from the longest anchor it extends, or whole).
func (c *tailCounter) count(s string) (int64, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	if !c.local {
		return c.full(s)
	}
	best := -1
	for i, a := range c.anchors {
		if a.tail != "" && len(a.text) <= len(s) && strings.HasPrefix(s, a.text) && (best < 0 || len(a.text) > len(c.anchors[best].text)) {
			best = i
		}
	}
	if best < 0 {
		n, err := c.full(s)
		if err != nil {
			return 0, err
		}
		return n, c.anchor(s, n)
	}
	a := c.anchors[best]
	x := s[len(a.text):]
	if x == "" {
		return a.n, nil
	}
	k, err := c.full(a.tail + x)
	if err != nil {
		return 0, err
	}
	n := a.n + k - a.tailN
	if len(x) >= reanchorBytes {
		return n, c.anchor(s, n)
	}
	return n, nil
}

// anchor remembers s (counted n) with its tail, dropping the oldest anchor past maxAnchors.
func (c *tailCounter) anchor(s string, n int64) error {
	a := countAnchor{text: s, n: n}
	if cut := tailCut(s); cut > 0 {
		a.tail = s[cut:]
		var err error
		if a.tailN, err = c.full(a.tail); err != nil {
			return err
		}
	}
	if len(c.anchors) == maxAnchors {
		c.anchors = c.anchors[:maxAnchors-1]
	}
	c.anchors = append([]countAnchor{a}, c.anchors...)
	return nil
}

// tailCut is where s's tail starts: the start of a word (a byte after a space, itself not a
// space) at least tailBytes before s's end and after at least one earlier word; 0 when s has
// none.
func tailCut(s string) int {
	for i := len(s) - tailBytes - 1; i > 0; i-- {
		if s[i-1] == ' ' && s[i] != ' ' {
			if strings.TrimLeft(s[:i], " ") == "" {
				return 0
			}
			return i
		}
	}
	return 0
}

// probeLocal reports whether counting the suffix after a tail gives full's counts on a few
// synthetic texts (tailCounter's premise): a handful of small counts, once per synthesis.
func probeLocal(full func(string) (int64, error)) bool {
	rng := metric.SplitMix64{State: 0x51574B50524F4245}
	var words []string
	for range 96 {
		words = append(words, syntheticWords[rng.Next()%uint64(len(syntheticWords))])
	}
	base := strings.Join(words, " ")
	for _, a := range []string{base, base + " ", base[:len(base)-1], base[:len(base)-2] + " x"} {
		fast := newTailCounter(context.Background(), full, true)
		if _, err := fast.count(a); err != nil || len(fast.anchors) == 0 || fast.anchors[0].tail == "" {
			return false
		}
		for _, x := range []string{" the", "s", " ", "  a", " quick brown fox", "ab cd", " 12,3.", "\n", strings.Repeat(" lorem", 20)} {
			got, err1 := fast.count(a + x)
			want, err2 := full(a + x)
			if err1 != nil || err2 != nil || got != want {
				return false
			}
		}
	}
	return true
}
