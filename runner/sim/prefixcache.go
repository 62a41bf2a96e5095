package sim

import (
	"encoding/binary"
	"hash/fnv"
	"strconv"
	"strings"
	"sync"
)

// PrefixCache declares qualsim's prefix cache, a model of vLLM's automatic prefix caching: a
// prompt is cut into blocks of BlockTokens tokens; a block is identified by the hash of every
// token from the start of the prompt to its end (so a block hits only when the whole prefix up to
// it matches). When a request takes a decode slot its leading run of cached full blocks is its
// hit, capped, as vLLM does, so that at least one prompt token is computed:
//
//	cached_tokens = BlockTokens × (number of leading full blocks cached, among the first
//	                               floor((prompt_tokens − 1) / BlockTokens))
//
// Every full block of the prompt is then cached (the oldest block is evicted beyond
// CapacityBlocks). A hit saves Timing.PrefillPerToken per cached token; usage reports
// prompt_tokens_details.cached_tokens and /metrics counts qualsim_prefix_cache_queries_total
// (prompt tokens looked up) and qualsim_prefix_cache_hits_total (cached tokens), as vLLM's
// vllm:prefix_cache_queries and vllm:prefix_cache_hits do.
type PrefixCache struct {
	// Enabled turns the cache on (off by default: no hits, no cached_tokens in usage).
	Enabled bool
	// BlockTokens is the block size in tokens (vLLM's default is 16).
	BlockTokens int
	// CapacityBlocks bounds the cached blocks.
	CapacityBlocks int
}

// DefaultPrefixCache is the cache qualsim's prefix_cache option turns on.
var DefaultPrefixCache = PrefixCache{BlockTokens: 16, CapacityBlocks: 1 << 16}

// Limits of the prefix cache declaration.
const (
	MaxPrefixBlockTokens    = 4096
	MaxPrefixCapacityBlocks = 1 << 22
)

// PromptTokenTexts returns the token sequence of p that the prefix cache hashes, one entry per
// token of Prompt.Tokens: the begin-of-sequence token; for chat, per message a role marker, a
// start-of-turn marker, the words of its content and an end-of-turn marker; for a completion
// prompt its words.
func (p Prompt) PromptTokenTexts() []string {
	out := make([]string, 0, p.Tokens())
	out = append(out, "\x00bos")
	if !p.Chat {
		return append(out, strings.Fields(p.Text)...)
	}
	for _, m := range p.Messages {
		out = append(out, "\x00role:"+m.Role, "\x00start")
		out = append(out, strings.Fields(m.Content)...)
		for _, d := range m.Images {
			for k := range p.ImageTokens {
				out = append(out, "\x00img:"+d+":"+strconv.Itoa(k))
			}
		}
		out = append(out, "\x00end")
	}
	return out
}

// prefixCache is the cache's state: block hashes in a map, evicted oldest first.
type prefixCache struct {
	cfg   PrefixCache
	mu    sync.Mutex
	set   map[uint64]struct{}
	order []uint64 // ring of inserted hashes, oldest at head
	head  int
}

func newPrefixCache(cfg PrefixCache) *prefixCache {
	if !cfg.Enabled {
		return nil
	}
	return &prefixCache{cfg: cfg, set: map[uint64]struct{}{}}
}

// blockHashes returns the chained hash of each full block of the model seed and tokens.
func blockHashes(modelSeed uint64, tokens []string, block int) []uint64 {
	h := fnv.New64a()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], modelSeed)
	h.Write(b[:])
	out := make([]uint64, 0, len(tokens)/block)
	for i, t := range tokens {
		h.Write([]byte(t))
		h.Write([]byte{0})
		if (i+1)%block == 0 {
			out = append(out, h.Sum64())
		}
	}
	return out
}

// lookupInsert returns the cached tokens of a prompt (see PrefixCache) and caches its blocks.
// promptTokens is the prompt's usage count: with a tokenizer (Config.Tokens) it can be fewer than
// the word tokens the blocks hash, and a hit never covers the whole prompt by either count.
func (c *prefixCache) lookupInsert(modelSeed uint64, p Prompt, promptTokens int) int {
	if c == nil {
		return 0
	}
	tokens := p.PromptTokenTexts()
	hs := blockHashes(modelSeed, tokens, c.cfg.BlockTokens)
	limit := 0
	if n := min(len(tokens), promptTokens); n > 0 {
		limit = (n - 1) / c.cfg.BlockTokens
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	hit := 0
	for hit < limit && hit < len(hs) {
		if _, ok := c.set[hs[hit]]; !ok {
			break
		}
		hit++
	}
	for _, h := range hs {
		if _, ok := c.set[h]; ok {
			continue
		}
		if len(c.order) < c.cfg.CapacityBlocks {
			c.order = append(c.order, h)
		} else {
			delete(c.set, c.order[c.head])
			c.order[c.head] = h
			c.head = (c.head + 1) % len(c.order)
		}
		c.set[h] = struct{}{}
	}
	return hit * c.cfg.BlockTokens
}

// reset empties the cache (POST /reset_prefix_cache, vLLM's endpoint of that name): every later
// prompt misses until its blocks are cached again.
func (c *prefixCache) reset() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.set = map[uint64]struct{}{}
	c.order, c.head = nil, 0
}
