package tokenize

import (
	"fmt"
	"hash/maphash"
	"strings"
	"sync/atomic"
	"unicode/utf8"
)

// spaceSep is SentencePiece's space: a text's spaces are encoded as it.
const spaceSep = "▁"

// merger counts the tokens of a text without special tokens exactly as ollama's
// SentencePiece.Encode encodes it (github.com/ollama/ollama/tokenizer v0.17.4): spaces become
// "▁"; a text that is a token is that token; otherwise its runes are merged, the adjacent pair
// whose joined text is the token of the highest score first (the leftmost of equal scores), and
// what stays unmerged and is not a token is spelled with byte tokens. ollama runs the merges over
// the whole text with a heap of pairs; so does merger, but over pieces of it where it can: when no
// token has a "▁" after a character other than "▁" (true of the usual vocabularies, whose
// "▁" runs lead), no merge can cross the point before a "▁" that follows another character, so
// the pieces between those points merge alone and the same tokens come out. A count is then
// linear in the text's length for text with spaces: the heap only grows with the longest piece.
type merger struct {
	// ids maps a token's text to its id (the last of a repeated text, as ollama's map).
	ids    map[string]int32
	scores []float32
	// byteToken[b]: the vocabulary has byte b's fallback token <0xBB>.
	byteToken [256]bool
	// pieces: no token has "▁" after a character other than "▁", so a text is merged piece by
	// piece.
	pieces bool
	// longest is the most bytes of a token's text: a longer text is not one token.
	longest int
	// cache remembers the counts of recent pieces (see pieceCache); nil without pieces.
	cache *pieceCache
}

func newMerger(tokens []string, scores []float32) *merger {
	m := &merger{ids: make(map[string]int32, len(tokens)), scores: scores, pieces: true}
	for i, tok := range tokens {
		m.ids[tok] = int32(i)
		m.longest = max(m.longest, len(tok))
		if strings.Contains(strings.TrimLeft(tok, spaceSep), spaceSep) {
			m.pieces = false
		}
	}
	if m.pieces {
		m.cache = &pieceCache{seed: maphash.MakeSeed()}
	}
	for b := range 256 {
		_, m.byteToken[b] = m.ids[fmt.Sprintf("<0x%02X>", b)]
	}
	return m
}

// count is the number of tokens of text (no special token in it). ops, when not nil, is
// incremented once per rune merged or looked at and once per heap operation, so that a test can
// check the work; the piece cache is then not used.
func (m *merger) count(text string, ops *int64) int64 {
	if m.cache == nil || ops != nil || !utf8.ValidString(text) {
		return m.countMerging(text, ops)
	}
	// The text is split into pieces as countMerging splits it once its spaces are "▁": before
	// each space or "▁" that follows another character. A piece's count is a function of its
	// text, so a cached count is the count merging it gives.
	if len(text) <= m.longest {
		if _, ok := m.ids[strings.ReplaceAll(text, " ", spaceSep)]; ok {
			return 1
		}
	}
	var n int64
	start, prevSpace := 0, false
	for i := 0; i < len(text); {
		c, w, space := text[i], 1, false
		switch {
		case c == ' ':
			space = true
		case c < utf8.RuneSelf:
		case strings.HasPrefix(text[i:], spaceSep):
			space, w = true, len(spaceSep)
		case c >= 0xF0:
			w = 4
		case c >= 0xE0:
			w = 3
		default:
			w = 2
		}
		if space && !prevSpace && i > start {
			n += m.piece(text[start:i])
			start = i
		}
		prevSpace = space
		i += w
	}
	return n + m.piece(text[start:])
}

// piece counts one piece (valid UTF-8, its spaces not yet "▁"), from the cache when it is there.
func (m *merger) piece(p string) int64 {
	if len(p) > maxCachedPiece {
		return m.merge(strings.ReplaceAll(p, " ", spaceSep), nil)
	}
	slot := &m.cache.slots[maphash.String(m.cache.seed, p)%uint64(len(m.cache.slots))]
	if e := slot.Load(); e != nil && e.piece == p {
		return e.n
	}
	n := m.merge(strings.ReplaceAll(p, " ", spaceSep), nil)
	// A clone: p points into the counted text, which the cache must not keep alive.
	slot.Store(&cachedPiece{piece: strings.Clone(p), n: n})
	return n
}

// Piece cache: a text of words is mostly the same few thousand pieces ("▁the", "▁model", ...),
// and merging a piece (a map lookup per candidate pair, a heap) costs far more than looking up
// its count. pieceCache is a direct-mapped table of pieceSlots recent pieces of at most
// maxCachedPiece bytes and their counts: a piece replaces whatever its slot held, so the table
// holds at most pieceSlots × maxCachedPiece bytes of text (about 1 MiB with its entries) whatever
// is counted. Slots are atomic pointers to immutable entries, so concurrent counts share it
// without a lock.
const (
	pieceSlots     = 1 << 14
	maxCachedPiece = 32
)

type pieceCache struct {
	seed  maphash.Seed
	slots [pieceSlots]atomic.Pointer[cachedPiece]
}

type cachedPiece struct {
	piece string
	n     int64
}

// countMerging is count without the piece cache: the text's spaces made "▁", then merged whole
// or piece by piece.
func (m *merger) countMerging(text string, ops *int64) int64 {
	text = strings.ReplaceAll(text, " ", spaceSep)
	if _, ok := m.ids[text]; ok {
		return 1
	}
	if !utf8.ValidString(text) {
		text = validRunes(text)
	}
	if !m.pieces {
		return m.merge(text, ops)
	}
	var n int64
	start, prev := 0, rune(0)
	for i, r := range text {
		if r == '▁' && prev != '▁' && i > start {
			n += m.merge(text[start:i], ops)
			start = i
		}
		prev = r
	}
	return n + m.merge(text[start:], ops)
}

// validRunes is text with each byte that is not part of a valid UTF-8 encoding replaced by
// U+FFFD, as Go's []rune(text) reads it.
func validRunes(text string) string {
	var b strings.Builder
	b.Grow(len(text) + 8)
	for _, r := range text {
		b.WriteRune(r)
	}
	return b.String()
}

// pair is a candidate merge of the adjacent symbols a and b into a token of score score and size
// bytes; it is stale when a or b has changed since.
type pair struct {
	a, b  int32
	size  int32
	score float32
}

// before is ollama's queue order: the higher score first, then the leftmost.
func (p pair) before(q pair) bool {
	return p.score > q.score || (p.score == q.score && p.a < q.a)
}

// merge counts the tokens of one piece (valid UTF-8).
func (m *merger) merge(text string, ops *int64) int64 {
	if text == "" {
		return 0
	}
	tick := func(k int) {
		if ops != nil {
			*ops += int64(k)
		}
	}
	// Symbol i is text[start[i]:end[i]]; an empty one was merged into its left neighbour.
	// prev and next link the live ones (-1 and len at the ends).
	n := utf8.RuneCountInString(text)
	tick(n)
	start := make([]int32, n)
	end := make([]int32, n)
	prev := make([]int32, n)
	next := make([]int32, n)
	i := 0
	for off, r := range text {
		start[i], end[i] = int32(off), int32(off+utf8.RuneLen(r))
		prev[i], next[i] = int32(i-1), int32(i+1)
		i++
	}
	var heap []pair
	push := func(a, b int32) {
		if a < 0 || int(b) >= n {
			return
		}
		id, ok := m.ids[text[start[a]:end[b]]]
		if !ok {
			return
		}
		heap = append(heap, pair{a, b, end[b] - start[a], m.scores[id]})
		// Sift up.
		for k := len(heap) - 1; k > 0; {
			tick(1)
			p := (k - 1) / 2
			if !heap[k].before(heap[p]) {
				break
			}
			heap[k], heap[p] = heap[p], heap[k]
			k = p
		}
	}
	pop := func() pair {
		top := heap[0]
		last := len(heap) - 1
		heap[0] = heap[last]
		heap = heap[:last]
		// Sift down.
		for k := 0; ; {
			tick(1)
			l, best := 2*k+1, k
			if l < len(heap) && heap[l].before(heap[best]) {
				best = l
			}
			if r := l + 1; r < len(heap) && heap[r].before(heap[best]) {
				best = r
			}
			if best == k {
				break
			}
			heap[k], heap[best] = heap[best], heap[k]
			k = best
		}
		return top
	}
	for i := range int32(n - 1) {
		push(i, i+1)
	}
	for len(heap) > 0 {
		p := pop()
		la, lb := end[p.a]-start[p.a], end[p.b]-start[p.b]
		if la == 0 || lb == 0 || la+lb != p.size {
			continue
		}
		end[p.a] = end[p.b]
		start[p.b], end[p.b] = 0, 0
		next[p.a] = next[p.b]
		if int(next[p.b]) < n {
			prev[next[p.b]] = p.a
		}
		push(prev[p.a], p.a)
		push(p.a, next[p.a])
	}
	var count int64
	for i := int32(0); int(i) < n; i = next[i] {
		tok := text[start[i]:end[i]]
		if _, ok := m.ids[tok]; ok {
			count++
			continue
		}
		for k := 0; k < len(tok); k++ {
			if m.byteToken[tok[k]] {
				count++
			}
		}
	}
	return count
}
