package tokenize

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/tools/internal/gguf"
	"github.com/qualkit/qualkit/tools/internal/qualgguf"
)

// tinyBytes is the GGUF qualgguf writes by default (the model make e2e-real serves with ollama).
func tinyBytes(t testing.TB) []byte {
	t.Helper()
	f, err := qualgguf.TinyLlama(qualgguf.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if _, err := gguf.Write(&b, f); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func tiny(t testing.TB) *Tokenizer {
	t.Helper()
	tk, err := Load(bytes.NewReader(tinyBytes(t)))
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

// TestTinyVocabularyCounts: counts derived by hand from the tiny vocabulary (every prefix of its
// words, with and without "▁", the printable ASCII characters, byte fallback): longer pieces win.
func TestTinyVocabularyCounts(t *testing.T) {
	tk := tiny(t)
	for _, c := range []struct {
		text string
		want int64
	}{
		{"", 0},
		{"hello", 1},              // hello
		{" hello", 1},             // ▁hello
		{"hello world", 2},        // hello ▁world
		{"hello  world", 3},       // hello ▁ ▁world
		{"Zq", 2},                 // Z q
		{"é", 2},                  // <0xC3> <0xA9>: no piece, byte fallback
		{"00042 00043 ", 12},      // 0 0 0 4 2 ▁ 0 0 0 4 3 ▁
		{"say hello to a new", 5}, // say ▁hello ▁to ▁a ▁new
	} {
		got, err := tk.TextTokens(c.text)
		if err != nil || got != c.want {
			t.Errorf("TextTokens(%q) = %d, %v; want %d", c.text, got, err, c.want)
		}
	}
}

// TestPromptTemplates: lines renders the Modelfile's template, adds the space prefix and BOS;
// contents counts each content alone and adds nothing.
func TestPromptTemplates(t *testing.T) {
	tk := tiny(t)
	roles, contents := []string{"system", "user"}, []string{"you are concise", "say hello"}
	if got := Render(contract.TokenizerTemplateLines, roles, contents); got != "system: you are concise\nsay hello" {
		t.Fatalf("Render lines = %q", got)
	}
	lines, err := tk.PromptTokens(contract.TokenizerTemplateLines, roles, contents)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := tk.TextTokens(" system: you are concise\nsay hello")
	if lines != want+1 {
		t.Errorf("lines = %d, want %d (+1 BOS)", lines, want+1)
	}
	sum, err := tk.PromptTokens(contract.TokenizerTemplateContents, roles, contents)
	if err != nil {
		t.Fatal(err)
	}
	if sum != 3+2 { // you ▁are ▁concise | say ▁hello
		t.Errorf("contents = %d, want 5", sum)
	}
	if _, err := tk.PromptTokens("chatml", roles, contents); err == nil {
		t.Error("unknown template accepted")
	}
	if _, err := tk.PromptTokens(contract.TokenizerTemplateLines, roles[:1], contents); err == nil {
		t.Error("roles and contents of different lengths accepted")
	}
}

func TestTextBound(t *testing.T) {
	tk := tiny(t)
	if _, err := tk.TextTokens(strings.Repeat("a", MaxTextBytes+1)); err == nil {
		t.Fatal("a text over MaxTextBytes was counted")
	}
}

// TestRefusedVocabularies: a file that is not a llama vocabulary, or whose vocabulary would make
// the encoder misbehave, is refused with ErrVocabulary.
func TestRefusedVocabularies(t *testing.T) {
	base, err := qualgguf.TinyLlama(qualgguf.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	edit := func(key string, v any) []byte {
		f := *base
		f.Metadata = append([]gguf.KV(nil), base.Metadata...)
		for i := range f.Metadata {
			if f.Metadata[i].Key == key {
				f.Metadata[i].Value = v
			}
		}
		var b bytes.Buffer
		if _, err := gguf.Write(&b, &f); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	n := qualgguf.VocabularySize(base)
	emptySpecial := make([]string, n)
	for i := range emptySpecial {
		emptySpecial[i] = "x"
	}
	emptySpecial[1] = ""
	for name, data := range map[string][]byte{
		"gpt2 model":        edit("tokenizer.ggml.model", "gpt2"),
		"few tokens":        edit("tokenizer.ggml.tokens", []string{"a", "b"}),
		"scores too short":  edit("tokenizer.ggml.scores", []float32{1}),
		"types too short":   edit("tokenizer.ggml.token_type", []int32{1}),
		"empty special":     edit("tokenizer.ggml.tokens", emptySpecial),
		"bos out of range":  edit("tokenizer.ggml.bos_token_id", uint32(n)),
		"bos flag a string": edit("tokenizer.ggml.add_bos_token", "yes"),
	} {
		if _, err := Load(bytes.NewReader(data)); !errors.Is(err, ErrVocabulary) {
			t.Errorf("%s: err %v, want ErrVocabulary", name, err)
		}
	}
	if _, err := Load(strings.NewReader("GGUF")); !errors.Is(err, gguf.ErrFormat) {
		t.Errorf("truncated file: err %v, want gguf.ErrFormat", err)
	}
}

// FuzzLoad: no input makes Load or a count panic or hang.
func FuzzLoad(f *testing.F) {
	data := tinyBytes(f)
	f.Add(data)
	f.Add(data[:len(data)/3])
	f.Add([]byte("GGUF\x03\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		tk, err := Load(bytes.NewReader(b))
		if err != nil {
			return
		}
		tk.TextTokens("say hello <s> world é")
		tk.PromptTokens(contract.TokenizerTemplateLines, []string{"user"}, []string{"</s>x"})
	})
}

// FuzzCount: any text counts without a panic, and the count of a text of n bytes is at most n
// (every token of a SentencePiece vocabulary with byte fallback covers at least one byte), where
// an invalid UTF-8 byte counts as the 3 bytes of U+FFFD it decodes to.
func FuzzCount(f *testing.F) {
	tk := tiny(f)
	for _, s := range []string{"", "hello world", "é\x00\xff", "<s></s><unk>", "▁▁ "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := tk.TextTokens(s)
		if err != nil {
			t.Fatal(err)
		}
		if v := []byte(string([]rune(s))); n > int64(len(v)) {
			t.Fatalf("%q: %d tokens for %d bytes", s, n, len(v))
		}
	})
}

// TestLoadFileRefusesNonRegular: a symlink, a FIFO (without blocking on it) and a directory are
// refused by the one open LoadFile makes.
func TestLoadFileRefusesNonRegular(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "real.gguf")
	if err := os.WriteFile(target, []byte("GGUF"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.gguf")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo.gguf")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, want string }{
		{link, "not a regular file (a symlink)"},
		{fifo, "not a regular file"},
		{dir, "not a regular file"},
	} {
		if _, err := LoadFile(tc.path); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.path, err, tc.want)
		}
	}
}
