package qualgguf

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/qualkit/qualkit/schemas/metric"
	"github.com/qualkit/qualkit/tools/internal/gguf"
)

// Config shapes the tiny llama model. The same Config always gives the same bytes.
type Config struct {
	// Dim is the embedding length (the residual stream's width).
	Dim int
	// Layers is the number of transformer blocks.
	Layers int
	// Heads and KVHeads are the attention and key/value head counts.
	Heads, KVHeads int
	// FF is the feed-forward length.
	FF int
	// Context is the training context length the model declares.
	Context int
	// SignatureDims is how many residual dimensions carry the input token's signature (see TinyLlama).
	SignatureDims int
	// Seed seeds every weight.
	Seed uint64
}

// DefaultConfig is the model scripts/e2e-real.sh serves: about a million parameters, 4.3 MB.
func DefaultConfig() Config {
	return Config{Dim: 128, Layers: 4, Heads: 4, KVHeads: 4, FF: 384, Context: 4096, SignatureDims: 32, Seed: 20261201}
}

// ErrConfig marks a Config that cannot describe a model.
var ErrConfig = errors.New("invalid model configuration")

func (c Config) check() error {
	switch {
	case c.Dim < 8 || c.Dim > 4096:
		return fmt.Errorf("%w: dim %d is not in 8..4096", ErrConfig, c.Dim)
	case c.Layers < 1 || c.Layers > 64:
		return fmt.Errorf("%w: layers %d is not in 1..64", ErrConfig, c.Layers)
	case c.Heads < 1 || c.KVHeads < 1 || c.Dim%c.Heads != 0 || c.Heads%c.KVHeads != 0:
		return fmt.Errorf("%w: dim %d must be divisible by heads %d, and heads by kv heads %d", ErrConfig, c.Dim, c.Heads, c.KVHeads)
	case (c.Dim/c.Heads)%2 != 0:
		return fmt.Errorf("%w: the head dimension %d must be even (rotary embeddings)", ErrConfig, c.Dim/c.Heads)
	case c.FF < 1 || c.FF > 16384:
		return fmt.Errorf("%w: ff %d is not in 1..16384", ErrConfig, c.FF)
	case c.Context < 16 || c.Context > 1<<20:
		return fmt.Errorf("%w: context %d is not in 16..1048576", ErrConfig, c.Context)
	case c.SignatureDims < 1 || c.SignatureDims > c.Dim-2:
		return fmt.Errorf("%w: signature dims %d must be in 1..dim-2 (%d)", ErrConfig, c.SignatureDims, c.Dim-2)
	}
	return nil
}

// Token types of llama.cpp's SentencePiece ("llama") vocabulary.
const (
	tokenNormal  = 1
	tokenUnknown = 2
	tokenControl = 3
	tokenByte    = 6
)

// words seed the vocabulary's multi-character pieces: the words of the committed workloads'
// prompts first, then common English words. Every prefix of each piece is a piece too, so that
// the bigram-merge SentencePiece encoders of llama.cpp and ollama reach every piece.
var words = strings.Fields(`
say hello to a new colleague in one sentence count from ten words separated by commas
explain what tcp three way handshake is list five colors of the rainbow write haiku about
server that starts on time you are concise technical writer
the and for with this have not but all were when your can said there use each which she how
their will other many then them these some her would make like him into has look two more
see number way could people than first water been call who its now find long down day did get
come made may part world token stream bench model fast slow test data value random tiny llama
load queue batch cache start stop ready light quiet river stone green blue red yellow orange
`)

// A vocabulary entry.
type piece struct {
	text  string
	score float32
	typ   int32
}

// vocabulary returns the tokens: <unk>, <s>, </s>, the 256 byte-fallback tokens, "▁", the 94
// printable ASCII characters, then every word piece (with and without a leading "▁", and every
// prefix) sorted, scored by length so that longer pieces win merges.
func vocabulary() []piece {
	v := []piece{{"<unk>", 0, tokenUnknown}, {"<s>", 0, tokenControl}, {"</s>", 0, tokenControl}}
	for b := 0; b < 256; b++ {
		v = append(v, piece{fmt.Sprintf("<0x%02X>", b), 0, tokenByte})
	}
	v = append(v, piece{"▁", -1, tokenNormal})
	for c := byte('!'); c <= '~'; c++ {
		v = append(v, piece{string(c), -1, tokenNormal})
	}
	seen := map[string]bool{}
	var pieces []string
	for _, w := range words {
		for _, form := range []string{"▁" + w, w} {
			r := []rune(form)
			for i := 2; i <= len(r); i++ {
				if s := string(r[:i]); !seen[s] {
					seen[s] = true
					pieces = append(pieces, s)
				}
			}
		}
	}
	sort.Strings(pieces)
	for _, s := range pieces {
		v = append(v, piece{s, float32(len([]rune(s))), tokenNormal})
	}
	return v
}

// uniform returns a value in [-a, a). The explicit conversions round every step, which stops the
// compiler from fusing a multiply and an add into one FMA on architectures that have it, so the
// bytes are the same on every architecture.
// splitmix64 is the weights' random stream (the SplitMix64 generator of schemas/metric).
type splitmix64 struct{ metric.SplitMix64 }

func (r *splitmix64) uniform(a float64) float32 {
	u := float64(r.Next()>>11) / (1 << 53)
	return float32(float64(float64(2*u)-1) * a)
}

// Constants of the engineered weights (see TinyLlama).
const (
	constantValue     = 4.0  // residual dimension 0 of every embedding
	constantGain      = 10.0 // output norm weight of dimension 0
	suppressWeight    = -20  // output weight on dimension 0 of control, unknown and byte tokens
	signatureLength   = 2.0  // length of the signature in the embeddings
	signaturePenalty  = 12.0 // weight of a token's own signature in its output row
	defaultAlignment  = 32
	modelArchitecture = "llama"
)

// TinyLlama builds a llama-architecture model with seeded random F32 weights and a small
// SentencePiece vocabulary. It is useless as a language model; it exists so that a real engine
// loads it in a second and runs real forward passes, and its weights are engineered so that a
// benchmark of it behaves:
//
//   - It never emits end-of-sequence, control, unknown or byte tokens. Residual dimension 0 holds
//     a constant in every embedding and no layer writes to it (the output rows of attn_output and
//     ffn_down for it are zero); the final norm amplifies it, and the output projection weighs it
//     strongly negative for exactly those tokens. So every request runs to max_tokens
//     (finish_reason "length") and every token decodes to printable ASCII on its own.
//   - It never emits the same trimmed text twice in a row. The next SignatureDims residual
//     dimensions carry, unchanged through the layers, a random unit signature of the input
//     token's text with spaces trimmed, and each output row subtracts its own token's signature.
//     ollama ends a stream silently (no finish_reason, no usage, no [DONE]) once one trimmed token
//     repeats more than 30 times in a row; a plain random greedy model does that.
//   - Everything derives from Seed: the same Config gives byte-identical files.
func TinyLlama(c Config) (*gguf.File, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	vocab := vocabulary()
	nv, dim := len(vocab), c.Dim
	fixed := 1 + c.SignatureDims // residual dimensions [0, fixed) are never written by a layer
	headDim := dim / c.Heads
	kvDim := headDim * c.KVHeads
	r := &splitmix64{metric.SplitMix64{State: c.Seed}}

	// matrix is rows x cols (ggml dims [cols, rows]) with unit-variance outputs for unit-variance inputs.
	matrix := func(rows, cols int) []float32 {
		a := math.Sqrt(3 / float64(cols))
		m := make([]float32, rows*cols)
		for i := range m {
			m[i] = r.uniform(a)
		}
		return m
	}
	ones := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = 1
		}
		return v
	}
	// keepFixed zeroes the output rows of the fixed residual dimensions.
	keepFixed := func(m []float32, cols int) []float32 {
		clear(m[:fixed*cols])
		return m
	}

	// One random unit signature per distinct trimmed token text (special tokens by their own name).
	sigs := map[string][]float32{}
	signature := make([][]float32, nv)
	for t, p := range vocab {
		key := p.text
		if p.typ == tokenNormal {
			key = strings.TrimSpace(strings.ReplaceAll(p.text, "▁", " "))
		}
		if s, ok := sigs[key]; ok {
			signature[t] = s
			continue
		}
		s := make([]float32, c.SignatureDims)
		var norm float64
		for i := range s {
			s[i] = r.uniform(1)
			norm += float64(float64(s[i]) * float64(s[i]))
		}
		norm = math.Sqrt(norm)
		for i := range s {
			s[i] = float32(float64(s[i]) / norm)
		}
		sigs[key], signature[t] = s, s
	}

	f := &gguf.File{}
	tensor := func(name string, data []float32, dims ...int) {
		d := make([]uint64, len(dims))
		for i, x := range dims {
			d[i] = uint64(x)
		}
		f.Tensors = append(f.Tensors, gguf.Tensor{Name: name, Dims: d, Data: data})
	}

	embd := make([]float32, nv*dim)
	for t := range vocab {
		row := embd[t*dim : (t+1)*dim]
		row[0] = constantValue
		for i, s := range signature[t] {
			row[1+i] = float32(signatureLength * float64(s))
		}
		for i := fixed; i < dim; i++ {
			row[i] = r.uniform(1)
		}
	}
	tensor("token_embd.weight", embd, dim, nv)
	for l := 0; l < c.Layers; l++ {
		p := fmt.Sprintf("blk.%d.", l)
		tensor(p+"attn_norm.weight", ones(dim), dim)
		tensor(p+"attn_q.weight", matrix(dim, dim), dim, dim)
		tensor(p+"attn_k.weight", matrix(kvDim, dim), dim, kvDim)
		tensor(p+"attn_v.weight", matrix(kvDim, dim), dim, kvDim)
		tensor(p+"attn_output.weight", keepFixed(matrix(dim, dim), dim), dim, dim)
		tensor(p+"ffn_norm.weight", ones(dim), dim)
		tensor(p+"ffn_gate.weight", matrix(c.FF, dim), dim, c.FF)
		tensor(p+"ffn_up.weight", matrix(c.FF, dim), dim, c.FF)
		tensor(p+"ffn_down.weight", keepFixed(matrix(dim, c.FF), c.FF), c.FF, dim)
	}
	onorm := ones(dim)
	onorm[0] = constantGain
	tensor("output_norm.weight", onorm, dim)
	out := matrix(nv, dim)
	for t, p := range vocab {
		row := out[t*dim : (t+1)*dim]
		row[0] = 0
		if p.typ != tokenNormal {
			row[0] = suppressWeight
		}
		for i, s := range signature[t] {
			row[1+i] = float32(-signaturePenalty * float64(s))
		}
	}
	tensor("output.weight", out, dim, nv)

	tokens := make([]string, nv)
	scores := make([]float32, nv)
	types := make([]int32, nv)
	for i, p := range vocab {
		tokens[i], scores[i], types[i] = p.text, p.score, p.typ
	}
	u := func(n int) uint32 { return uint32(n) }
	f.Metadata = []gguf.KV{
		{Key: "general.architecture", Value: modelArchitecture},
		{Key: "general.name", Value: "qualkit-tiny-llama"},
		{Key: "general.file_type", Value: u(0)}, // all F32
		{Key: "general.alignment", Value: u(defaultAlignment)},
		{Key: "llama.vocab_size", Value: u(nv)},
		{Key: "llama.context_length", Value: u(c.Context)},
		{Key: "llama.embedding_length", Value: u(dim)},
		{Key: "llama.block_count", Value: u(c.Layers)},
		{Key: "llama.feed_forward_length", Value: u(c.FF)},
		{Key: "llama.attention.head_count", Value: u(c.Heads)},
		{Key: "llama.attention.head_count_kv", Value: u(c.KVHeads)},
		{Key: "llama.attention.key_length", Value: u(headDim)},
		{Key: "llama.attention.value_length", Value: u(headDim)},
		{Key: "llama.rope.dimension_count", Value: u(headDim)},
		{Key: "llama.rope.freq_base", Value: float32(10000)},
		{Key: "llama.attention.layer_norm_rms_epsilon", Value: float32(1e-5)},
		{Key: "tokenizer.ggml.model", Value: "llama"},
		{Key: "tokenizer.ggml.tokens", Value: tokens},
		{Key: "tokenizer.ggml.scores", Value: scores},
		{Key: "tokenizer.ggml.token_type", Value: types},
		{Key: "tokenizer.ggml.unknown_token_id", Value: u(0)},
		{Key: "tokenizer.ggml.bos_token_id", Value: u(1)},
		{Key: "tokenizer.ggml.eos_token_id", Value: u(2)},
		{Key: "tokenizer.ggml.add_bos_token", Value: true},
		{Key: "tokenizer.ggml.add_eos_token", Value: false},
	}
	return f, nil
}

// Parameters counts the model's weights.
func Parameters(f *gguf.File) int {
	n := 0
	for _, t := range f.Tensors {
		n += len(t.Data)
	}
	return n
}

// VocabularySize is the length of the model's tokenizer.ggml.tokens.
func VocabularySize(f *gguf.File) int {
	for _, kv := range f.Metadata {
		if tokens, ok := kv.Value.([]string); ok && kv.Key == "tokenizer.ggml.tokens" {
			return len(tokens)
		}
	}
	return 0
}
