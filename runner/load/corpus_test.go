package load

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/evidence"
	"github.com/qualkit/qualkit/schemas/metric"
)

// TestSplitMix64 pins the generator to the reference outputs for seed 0.
func TestSplitMix64(t *testing.T) {
	r := metric.SplitMix64{}
	for _, want := range []uint64{0xe220a8397b1dcdaf, 0x6e789e6aa1b965f4, 0x06c45d188009454f} {
		if got := r.Next(); got != want {
			t.Fatalf("got %#x, want %#x", got, want)
		}
	}
}

// TestSyntheticWordsGolden pins qualkit.synthetic-words.v1: a change here is a new generator
// version, not a fix.
func TestSyntheticWordsGolden(t *testing.T) {
	got := SyntheticWords(42, 3, 2, 5)
	want := []Prompt{
		{ID: "synthetic-000000", Text: "act door half"},
		{ID: "synthetic-000001", Text: "again end hot mile"},
		{ID: "synthetic-000002", Text: "life letter need laugh"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v", got)
	}
	seen := map[string]bool{}
	for _, w := range syntheticWords {
		if w == "" || seen[w] || strings.ToLower(w) != w {
			t.Fatalf("word %q empty, repeated or not lower-case", w)
		}
		seen[w] = true
	}
	for _, p := range SyntheticWords(7, 200, 1, 9) {
		if n := len(strings.Fields(p.Text)); n < 1 || n > 9 {
			t.Fatalf("%s has %d words", p.ID, n)
		}
	}
}

func TestWarmupPrompts(t *testing.T) {
	corpus := []Prompt{{ID: "aaa", Text: "one two three", System: "sys"}, {ID: "bbb", Text: "x"}}
	got := warmupPrompts(corpus, 3, 7, 4, 1)
	want := []Prompt{{ID: "warmup-0000", Text: "even cry carry", System: "sys"}, {ID: "warmup-0001", Text: "only"}, {ID: "warmup-0002", Text: "just noun eye", System: "sys"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v", got)
	}
	if reflect.DeepEqual(warmupPrompts(corpus, 3, 7, 4, 2), got) {
		t.Fatal("two repetitions warm up with the same prompts")
	}
}

func writeCorpus(t *testing.T, content string) (string, contract.Corpus) {
	t.Helper()
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "corpora"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "corpora", "p.jsonl"), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return root, contract.Corpus{Source: "file", Path: "corpora/p.jsonl", Digest: evidence.DigestOf([]byte(content))}
}

func TestResolve(t *testing.T) {
	seed := int64(42)
	ps, err := Resolve(contract.Corpus{Source: "synthetic", Generator: contract.SyntheticCorpusGenerator, Seed: &seed, Count: 3, PromptWords: &contract.WordsRange{Min: 2, Max: 5}}, "")
	if err != nil || len(ps) != 3 || ps[0].Text != "act door half" {
		t.Fatalf("synthetic: %v %+v", err, ps)
	}
	ps, err = Resolve(contract.Corpus{Source: "inline", Prompts: []contract.Prompt{{ID: "abc", Text: "hi", System: "s"}}}, "")
	if err != nil || !reflect.DeepEqual(ps, []Prompt{{ID: "abc", Text: "hi", System: "s"}}) {
		t.Fatalf("inline: %v %+v", err, ps)
	}
	root, c := writeCorpus(t, `{"id":"one","text":"first"}`+"\n"+`{"id":"two","text":"second","system":"be brief"}`+"\n")
	ps, err = Resolve(c, root)
	if err != nil || !reflect.DeepEqual(ps, []Prompt{{ID: "one", Text: "first"}, {ID: "two", Text: "second", System: "be brief"}}) {
		t.Fatalf("file: %v %+v", err, ps)
	}
	// No final newline is fine too.
	root, c = writeCorpus(t, `{"id":"one","text":"first"}`)
	if _, err := Resolve(c, root); err != nil {
		t.Fatal(err)
	}
}

func TestResolveRejects(t *testing.T) {
	bad := []struct {
		name, content, msg string
	}{
		{"unknown field", `{"id":"one","text":"x","extra":1}`, "unknown field"},
		{"duplicate key", `{"id":"one","id":"two","text":"x"}`, "duplicate"},
		{"missing text", `{"id":"one"}`, "want {"},
		{"blank line", `{"id":"one","text":"x"}` + "\n\n" + `{"id":"two","text":"y"}`, "blank line"},
		{"repeated id", `{"id":"one","text":"x"}` + "\n" + `{"id":"one","text":"y"}`, "repeats"},
		{"bad id", `{"id":"A!","text":"x"}`, "portable id"},
		{"empty text", `{"id":"one","text":""}`, "empty text"},
		{"not json", `id,text`, "line 1"},
	}
	for _, tt := range bad {
		root, c := writeCorpus(t, tt.content)
		_, err := Resolve(c, root)
		if !errors.Is(err, ErrCorpus) || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("%s: %v", tt.name, err)
		}
	}
	root, c := writeCorpus(t, `{"id":"one","text":"x"}`)
	c.Digest = "sha256:" + strings.Repeat("0", 64)
	if _, err := Resolve(c, root); err == nil || !strings.Contains(err.Error(), "the workload declares sha256:000") || !strings.Contains(err.Error(), evidence.DigestOf([]byte(`{"id":"one","text":"x"}`))) {
		t.Errorf("digest mismatch: %v", err)
	}
	c.Path = "../outside.jsonl"
	if _, err := Resolve(c, root); !errors.Is(err, ErrCorpus) {
		t.Errorf("path outside: %v", err)
	}
	seed := int64(1)
	for _, sc := range []contract.Corpus{
		{Source: "synthetic", Generator: "other.v1", Seed: &seed, Count: 1, PromptWords: &contract.WordsRange{Min: 1, Max: 1}},
		{Source: "synthetic", Generator: contract.SyntheticCorpusGenerator, Count: 1, PromptWords: &contract.WordsRange{Min: 1, Max: 1}},
		{Source: "synthetic", Generator: contract.SyntheticCorpusGenerator, Seed: &seed, Count: 1, PromptWords: &contract.WordsRange{Min: 3, Max: 2}},
		{Source: "inline"},
		{Source: "other"},
	} {
		if _, err := Resolve(sc, root); !errors.Is(err, ErrCorpus) {
			t.Errorf("%+v: %v", sc, err)
		}
	}
}
