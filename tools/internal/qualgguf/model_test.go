package qualgguf

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/qualkit/qualkit/tools/internal/gguf"
)

// goldenDigest is the sha256 of the default model. It changes only when the model is meant to
// change: every receipt of scripts/e2e-real.sh binds the served model by digest, so a silent change
// of the generator would make old and new campaigns incomparable (qualverify compare rejects
// different model files).
const goldenDigest = "sha256:ef09da20709fa415d4bf23cadc8598611e7a5ff2b5bc429bc333bdb6bf64454d"

const goldenBytes = 4546560

func encode(t *testing.T, c Config) []byte {
	t.Helper()
	f, err := TinyLlama(c)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := gguf.Write(&buf, f); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func digestOf(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

func TestDefaultModelGoldenDigest(t *testing.T) {
	b := encode(t, DefaultConfig())
	if got := digestOf(b); got != goldenDigest || len(b) != goldenBytes {
		t.Fatalf("default model: %s, %d bytes; want %s, %d bytes (update the golden values only when the model is meant to change)", got, len(b), goldenDigest, goldenBytes)
	}
	if again := encode(t, DefaultConfig()); !bytes.Equal(b, again) {
		t.Fatal("two encodings of the default model differ")
	}
}

func TestSeedAndShapeChangeTheBytes(t *testing.T) {
	base := digestOf(encode(t, DefaultConfig()))
	for name, mod := range map[string]func(*Config){
		"seed":   func(c *Config) { c.Seed++ },
		"layers": func(c *Config) { c.Layers = 2 },
		"dim":    func(c *Config) { c.Dim, c.FF = 64, 192 },
	} {
		c := DefaultConfig()
		mod(&c)
		if digestOf(encode(t, c)) == base {
			t.Errorf("changing %s left the file unchanged", name)
		}
	}
}

// TestDefaultModelParsesBack reads the default model's header back and checks what llama.cpp
// needs to load it: the architecture keys, a vocabulary matching the embedding and output
// tensors, every tensor of every block with its ggml dimensions, F32 throughout, aligned,
// contiguous offsets, and a file exactly as long as the tensor table says.
func TestDefaultModelParsesBack(t *testing.T) {
	c := DefaultConfig()
	b := encode(t, c)
	h, err := gguf.Read(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"general.architecture":                   "llama",
		"general.alignment":                      uint32(32),
		"llama.embedding_length":                 uint32(128),
		"llama.block_count":                      uint32(4),
		"llama.feed_forward_length":              uint32(384),
		"llama.attention.head_count":             uint32(4),
		"llama.attention.head_count_kv":          uint32(4),
		"llama.context_length":                   uint32(4096),
		"llama.rope.dimension_count":             uint32(32),
		"tokenizer.ggml.model":                   "llama",
		"tokenizer.ggml.bos_token_id":            uint32(1),
		"tokenizer.ggml.eos_token_id":            uint32(2),
		"tokenizer.ggml.unknown_token_id":        uint32(0),
		"tokenizer.ggml.add_bos_token":           true,
		"general.file_type":                      uint32(0),
		"llama.attention.key_length":             uint32(32),
		"llama.attention.value_length":           uint32(32),
		"tokenizer.ggml.add_eos_token":           false,
		"llama.rope.freq_base":                   float32(10000),
		"general.name":                           "qualkit-tiny-llama",
		"llama.attention.layer_norm_rms_epsilon": float32(1e-5),
	}
	for k, v := range want {
		if got, ok := h.Lookup(k); !ok || !reflect.DeepEqual(got, v) {
			t.Errorf("%s = %#v (%v), want %#v", k, got, ok, v)
		}
	}
	tokens, _ := mustLookup(t, h, "tokenizer.ggml.tokens").([]string)
	scores, _ := mustLookup(t, h, "tokenizer.ggml.scores").([]float32)
	types, _ := mustLookup(t, h, "tokenizer.ggml.token_type").([]int32)
	nv := len(tokens)
	if nv < 300 || len(scores) != nv || len(types) != nv || mustLookup(t, h, "llama.vocab_size") != uint32(nv) {
		t.Fatalf("vocabulary: %d tokens, %d scores, %d types, vocab_size %v", nv, len(scores), len(types), mustLookup(t, h, "llama.vocab_size"))
	}
	if tokens[0] != "<unk>" || tokens[1] != "<s>" || tokens[2] != "</s>" || tokens[3] != "<0x00>" || tokens[258] != "<0xFF>" || tokens[259] != "▁" {
		t.Errorf("special tokens: %q", tokens[:4])
	}
	seen := map[string]bool{}
	for i, tok := range tokens {
		if seen[tok] {
			t.Errorf("token %d %q appears twice", i, tok)
		}
		seen[tok] = true
	}
	// Every multi-character piece is reachable by merging a shorter piece with one character.
	for _, tok := range tokens[259+95:] {
		r := []rune(tok)
		if !seen[string(r[:len(r)-1])] || !seen[string(r[len(r)-1:])] {
			t.Errorf("piece %q cannot be reached by a merge", tok)
		}
	}

	var names []string
	dims := map[string][]uint64{}
	var next uint64
	for _, ti := range h.Tensors {
		names = append(names, ti.Name)
		dims[ti.Name] = ti.Dims
		if ti.Type != gguf.TensorTypeF32 {
			t.Errorf("tensor %s has type %d, want F32", ti.Name, ti.Type)
		}
		if ti.Offset != next {
			t.Errorf("tensor %s at %d, want %d (contiguous, aligned)", ti.Name, ti.Offset, next)
		}
		n := uint64(4)
		for _, d := range ti.Dims {
			n *= d
		}
		next = ti.Offset + (n+31)/32*32
	}
	if int64(len(b)) != h.DataOffset+int64(next) {
		t.Errorf("file is %d bytes; the tensor table ends at %d", len(b), h.DataOffset+int64(next))
	}
	wantNames := []string{"token_embd.weight"}
	for l := range c.Layers {
		for _, n := range []string{"attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "ffn_norm", "ffn_gate", "ffn_up", "ffn_down"} {
			wantNames = append(wantNames, "blk."+string(rune('0'+l))+"."+n+".weight")
		}
	}
	wantNames = append(wantNames, "output_norm.weight", "output.weight")
	if !reflect.DeepEqual(names, wantNames) {
		t.Errorf("tensors:\n got %v\nwant %v", names, wantNames)
	}
	for name, d := range map[string][]uint64{
		"token_embd.weight":        {128, uint64(nv)},
		"output.weight":            {128, uint64(nv)},
		"blk.3.ffn_down.weight":    {384, 128},
		"blk.0.ffn_gate.weight":    {128, 384},
		"blk.2.attn_k.weight":      {128, 128},
		"output_norm.weight":       {128},
		"blk.1.attn_norm.weight":   {128},
		"blk.0.attn_output.weight": {128, 128},
	} {
		if !reflect.DeepEqual(dims[name], d) {
			t.Errorf("%s dims %v, want %v", name, dims[name], d)
		}
	}
}

func mustLookup(t *testing.T, h *gguf.Header, key string) any {
	t.Helper()
	v, ok := h.Lookup(key)
	if !ok {
		t.Fatalf("metadata %s missing", key)
	}
	return v
}

// TestEngineeredWeights checks the two properties the engines rely on, on the weights themselves:
// no layer writes the fixed residual dimensions, and only printable normal tokens escape the
// suppression on dimension 0.
func TestEngineeredWeights(t *testing.T) {
	c := DefaultConfig()
	f, err := TinyLlama(c)
	if err != nil {
		t.Fatal(err)
	}
	fixed := 1 + c.SignatureDims
	byName := map[string]gguf.Tensor{}
	for _, tn := range f.Tensors {
		byName[tn.Name] = tn
	}
	for l := range c.Layers {
		for _, n := range []string{"attn_output", "ffn_down"} {
			tn := byName["blk."+string(rune('0'+l))+"."+n+".weight"]
			cols := int(tn.Dims[0])
			for i, v := range tn.Data[:fixed*cols] {
				if v != 0 {
					t.Fatalf("%s writes fixed residual dimension %d (value %v)", tn.Name, i/cols, v)
				}
			}
		}
	}
	vocab := vocabulary()
	out := byName["output.weight"]
	embd := byName["token_embd.weight"]
	for tok, p := range vocab {
		w := out.Data[tok*c.Dim]
		if (p.typ == tokenNormal) != (w == 0) || (p.typ != tokenNormal && w != suppressWeight) {
			t.Errorf("token %d %q (type %d): output weight on dimension 0 is %v", tok, p.text, p.typ, w)
		}
		if embd.Data[tok*c.Dim] != constantValue {
			t.Errorf("token %d: embedding dimension 0 is %v", tok, embd.Data[tok*c.Dim])
		}
		var norm float64
		for _, v := range embd.Data[tok*c.Dim+1 : tok*c.Dim+fixed] {
			norm += float64(v) * float64(v)
		}
		if math.Abs(math.Sqrt(norm)-signatureLength) > 1e-4 {
			t.Errorf("token %d: signature length %v, want %v", tok, math.Sqrt(norm), signatureLength)
		}
	}
	// " the" and "the" share a signature: the model cannot alternate between them.
	idx := map[string]int{}
	for i, p := range vocab {
		idx[p.text] = i
	}
	a, b := idx["▁the"], idx["the"]
	if !reflect.DeepEqual(embd.Data[a*c.Dim+1:a*c.Dim+fixed], embd.Data[b*c.Dim+1:b*c.Dim+fixed]) {
		t.Error(`"▁the" and "the" carry different signatures`)
	}
}

func TestConfigErrors(t *testing.T) {
	for name, mod := range map[string]func(*Config){
		"dim not divisible by heads": func(c *Config) { c.Heads = 3 },
		"heads not divisible by kv":  func(c *Config) { c.KVHeads = 3 },
		"odd head dim":               func(c *Config) { c.Dim, c.Heads, c.KVHeads = 12, 4, 4 },
		"no layers":                  func(c *Config) { c.Layers = 0 },
		"signature too wide":         func(c *Config) { c.SignatureDims = c.Dim - 1 },
		"no signature":               func(c *Config) { c.SignatureDims = 0 },
		"tiny context":               func(c *Config) { c.Context = 8 },
		"huge ff":                    func(c *Config) { c.FF = 1 << 20 },
	} {
		c := DefaultConfig()
		mod(&c)
		if _, err := TinyLlama(c); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: %v, want ErrConfig", name, err)
		} else if !strings.Contains(err.Error(), "invalid model configuration") {
			t.Errorf("%s: %v", name, err)
		}
	}
}
