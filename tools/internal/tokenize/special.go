package tokenize

import (
	"slices"
)

// specials finds the special tokens of a text (the vocabulary's control and user-defined
// tokens) exactly as ollama's SentencePiece.Encode splits a text at them, in time linear in the
// text's length.
//
// ollama's rule: for each special token in vocabulary order, every text fragment not yet taken
// by a special token is split at that token's occurrences, leftmost first and not overlapping.
// Equivalently, over all occurrences ordered by (vocabulary order, position), an occurrence is
// taken when it overlaps no occurrence taken before it. ollama runs it as one strings.Index pass
// per special token over a fragment list it rebuilds at every match: its cost grows with the
// number of special tokens times the number of fragments times the text's length (issue 27 item
// 7: 21 s for a 4 KB prompt with 310 special tokens).
//
// Here one Aho–Corasick pass over the text finds, at each end position, the special tokens that
// end there. An occurrence that contains an occurrence of an earlier special token is never
// taken (that one is taken, or something earlier that overlaps it is, before this one's turn),
// so at one end position only the occurrences whose rank is below that of every shorter one
// there are candidates (kept, below). Each end position is then one stream of candidates, longest
// first, in a bucket by the rank of its current candidate; the buckets are emptied in rank order,
// each in position order, and a candidate that overlaps a taken occurrence advances its stream
// to the next one that does not. Every candidate is looked at once: the work is the text's length
// times at most the number of distinct special-token lengths (at most MaxSpecialTokenBytes), and
// the memory is linear in the text's length.
type specials struct {
	// The trie of the distinct special tokens: node 0 is the root. Children of node s are
	// edges[first[s]:first[s+1]] (sorted by byte) and their nodes child[...].
	root      [256]int32 // the root's transitions, 0 where none
	first     []int32
	edgeByte  []byte
	edgeChild []int32
	fail      []int32
	depth     []int32
	// rank[s]: the vocabulary order of the special token spelled by node s, -1 if none.
	rank []int32
	// head[s]: the longest kept candidate among the special tokens that are suffixes of node s's
	// text (node s itself or along its suffix links), -1 if none; next[s] the next shorter kept
	// candidate after node s, -1 if none.
	head, next []int32
	// longest[s]: the length of the longest special token that is a suffix of node s's text, 0
	// if none.
	longest []int32
	n       int // distinct special tokens (ranks 0..n-1)
}

// newSpecials builds the matcher of tokens in priority order (a repeated token keeps its first
// rank: the later one never matches in ollama either).
func newSpecials(tokens []string) *specials {
	type node struct {
		kids map[byte]int32
	}
	trie := []node{{}}
	rank := []int32{-1}
	depth := []int32{0}
	n := 0
	for _, tok := range tokens {
		s := int32(0)
		for i := 0; i < len(tok); i++ {
			c := tok[i]
			nx, ok := trie[s].kids[c]
			if !ok {
				nx = int32(len(trie))
				if trie[s].kids == nil {
					trie[s].kids = map[byte]int32{}
				}
				trie[s].kids[c] = nx
				trie = append(trie, node{})
				rank = append(rank, -1)
				depth = append(depth, depth[s]+1)
			}
			s = nx
		}
		if rank[s] < 0 {
			rank[s] = int32(n)
			n++
		}
	}
	m := &specials{rank: rank, depth: depth, n: n}
	// Flatten the trie's edges, sorted by byte.
	m.first = make([]int32, len(trie)+1)
	for s := range trie {
		m.first[s] = int32(len(m.edgeByte))
		keys := make([]byte, 0, len(trie[s].kids))
		for c := range trie[s].kids {
			keys = append(keys, c)
		}
		slices.Sort(keys)
		for _, c := range keys {
			m.edgeByte = append(m.edgeByte, c)
			m.edgeChild = append(m.edgeChild, trie[s].kids[c])
		}
	}
	m.first[len(trie)] = int32(len(m.edgeByte))
	for c, s := range trie[0].kids {
		m.root[c] = s
	}
	// Failure links in breadth-first order, then the kept candidates: node x (a special token)
	// is kept when its rank is below that of every shorter special token that is a suffix of it.
	m.fail = make([]int32, len(trie))
	m.head = make([]int32, len(trie))
	m.next = make([]int32, len(trie))
	m.longest = make([]int32, len(trie))
	// minBelow[x]: the lowest rank among the special tokens that are proper suffixes of node x's
	// text; dict[x]: the longest such, -1 if none.
	minBelow := make([]int32, len(trie))
	dict := make([]int32, len(trie))
	const none = int32(1<<31 - 1)
	m.head[0], m.next[0], minBelow[0], dict[0] = -1, -1, none, -1
	queue := []int32{0}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		for e := m.first[s]; e < m.first[s+1]; e++ {
			c, x := m.edgeByte[e], m.edgeChild[e]
			f := int32(0)
			if s != 0 {
				f = m.fail[s]
				for f != 0 && m.step(f, c) < 0 {
					f = m.fail[f]
				}
				if g := m.step(f, c); g >= 0 {
					f = g
				} else {
					f = 0
				}
			}
			m.fail[x] = f
			m.longest[x] = m.longest[f]
			if rank[x] >= 0 {
				m.longest[x] = m.depth[x]
			}
			// The suffixes of x's text below x are f's text and its suffixes.
			if rank[f] >= 0 {
				dict[x], minBelow[x] = f, min(rank[f], minBelow[f])
			} else {
				dict[x], minBelow[x] = dict[f], minBelow[f]
			}
			// The first kept candidate strictly below x along its suffixes is f's head (the kept
			// set of a node depends only on the ranks of its suffixes, which x shares).
			below := m.head[f]
			if rank[x] >= 0 && rank[x] < minBelow[x] {
				m.head[x], m.next[x] = x, below
			} else {
				m.head[x], m.next[x] = below, -1
			}
			queue = append(queue, x)
		}
	}
	return m
}

// step is node s's transition on byte c, -1 if none.
func (m *specials) step(s int32, c byte) int32 {
	if s == 0 {
		if x := m.root[c]; x != 0 {
			return x
		}
		return -1
	}
	lo, hi := m.first[s], m.first[s+1]
	for lo < hi {
		mid := int32(uint32(lo+hi) >> 1)
		if m.edgeByte[mid] < c {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo < m.first[s+1] && m.edgeByte[lo] == c {
		return m.edgeChild[lo]
	}
	return -1
}

// scan calls fn with each end position of text where a special token ends and the start of the
// longest one ending there, until fn returns false.
func (m *specials) scan(text string, fn func(start, end int) bool) {
	s := int32(0)
	for i := 0; i < len(text); i++ {
		c := text[i]
		for s != 0 {
			if x := m.step(s, c); x >= 0 {
				s = x
				break
			}
			s = m.fail[s]
		}
		if s == 0 {
			s = m.root[c]
		}
		if l := m.longest[s]; l > 0 && !fn(i+1-int(l), i+1) {
			return
		}
	}
}

// span is a special token taken at text[start:end].
type span struct{ start, end int }

// find returns the special tokens ollama takes in text, in position order. ops, when not nil,
// is incremented once per unit of work (a trie step or failure step, a candidate looked at, a
// word of the taken-bytes bitset read), so a test can check the work is linear in len(text).
func (m *specials) find(text string, ops *int64) []span {
	if m.n == 0 {
		return nil
	}
	count := func(k int) {
		if ops != nil {
			*ops += int64(k)
		}
	}
	// One pass: the streams, one per end position with a kept candidate, in position order.
	type stream struct {
		end  int32
		cand int32 // the current candidate's node
		took bool  // cand was taken
	}
	var streams []stream
	s := int32(0)
	for i := 0; i < len(text); i++ {
		c := text[i]
		count(1)
		for s != 0 {
			if x := m.step(s, c); x >= 0 {
				s = x
				break
			}
			s = m.fail[s]
			count(1)
		}
		if s == 0 {
			s = m.root[c]
		}
		if h := m.head[s]; h >= 0 {
			streams = append(streams, stream{end: int32(i + 1), cand: h})
		}
	}
	if len(streams) == 0 {
		return nil
	}
	// Buckets by rank: bucket[r] lists the streams whose current candidate has rank r.
	bucket := make([][]int32, m.n)
	for i, st := range streams {
		r := m.rank[st.cand]
		bucket[r] = append(bucket[r], int32(i))
	}
	taken := make([]uint64, len(text)/64+1)
	took := 0
	for r := range bucket {
		b := bucket[r]
		if len(b) == 0 {
			continue
		}
		// Streams join a bucket in position order at first, later ones in any order: sort.
		if !slices.IsSorted(b) {
			slices.Sort(b)
			count(len(b))
		}
		for _, i := range b {
			st := &streams[i]
			end := int(st.end)
			x := st.cand
			for x >= 0 {
				count(1)
				start := end - int(m.depth[x])
				if !overlaps(taken, start, end, count) {
					break
				}
				x = m.next[x]
			}
			switch {
			case x < 0:
			case m.rank[x] == int32(r):
				set(taken, end-int(m.depth[x]), end)
				st.took = true
				took++
			default:
				st.cand = x
				bucket[m.rank[x]] = append(bucket[m.rank[x]], i)
			}
		}
		bucket[r] = nil
	}
	// Taken spans do not overlap: in the order of their ends, they are in the order of their
	// starts.
	out := make([]span, 0, took)
	for _, st := range streams {
		if st.took {
			out = append(out, span{int(st.end - m.depth[st.cand]), int(st.end)})
		}
	}
	return out
}

// overlaps reports whether any byte of [a, b) is taken.
func overlaps(taken []uint64, a, b int, count func(int)) bool {
	for a < b {
		w, bit := a/64, uint(a%64)
		k := min(64-int(bit), b-a)
		mask := (uint64(1)<<uint(k) - 1) << bit
		if k == 64 {
			mask = ^uint64(0)
		}
		count(1)
		if taken[w]&mask != 0 {
			return true
		}
		a += k
	}
	return false
}

// set marks [a, b) taken.
func set(taken []uint64, a, b int) {
	for ; a < b; a++ {
		taken[a/64] |= 1 << uint(a%64)
	}
}
