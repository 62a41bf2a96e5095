package load

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/evidence"
)

// goldenDigests digests the texts synth writes for the repository's Mooncake sample with thirds
// and for a Mooncake-like trace (inputs capped at 20k tokens) with words4.
func goldenDigests(t *testing.T, synth func([]TraceEntry, TokenCounter) ([]Prompt, error)) [2]string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("..", "..", "workloads", "traces", "mooncake-sample.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	sample, err := ImportMooncake(bytes.NewReader(src))
	if err != nil {
		t.Fatal(err)
	}
	like := mooncakeLike(11, 24)
	for i := range like {
		like[i].InputLength = min(like[i].InputLength, 20_000)
		like[i].HashIDs = like[i].HashIDs[:min(len(like[i].HashIDs), int((like[i].InputLength+511)/512))]
	}
	var out [2]string
	for k, c := range []struct {
		es []TraceEntry
		tc TokenCounter
	}{{sample, thirds{}}, {like, words4{}}} {
		ps, err := synth(c.es, c.tc)
		if err != nil {
			t.Fatal(err)
		}
		var all bytes.Buffer
		for _, p := range ps {
			all.WriteString(p.Text)
			all.WriteByte(0)
		}
		out[k] = evidence.DigestOf(all.Bytes())
	}
	return out
}

// TestTraceTokenPromptsBytesUnchanged: token-exact synthesis writes the bytes it wrote before
// counts were derived from suffixes (digests taken with 4822f1d's TraceTokenPrompts): the same
// trace and tokenizer give the same prompts, so old receipts' body digests still describe them.
func TestTraceTokenPromptsBytesUnchanged(t *testing.T) {
	got := goldenDigests(t, func(es []TraceEntry, tc TokenCounter) ([]Prompt, error) {
		return TraceTokenPrompts(context.Background(), es, 512, 1, tc, contract.TokenizerTemplateLines, nil)
	})
	want := [2]string{
		"sha256:c45cadfd1848aa6cf305e4ffbdf1823083e9ca95ff3b56904e016baca712a997", // mooncake-sample.jsonl, thirds
		"sha256:2b164528e309155c4f9c42c6609ff84b0ef02f2f1f8797b11ac590529fed7a53", // mooncakeLike(11, 24), words4
	}
	if got != want {
		t.Fatalf("prompt digests %v, want %v", got, want)
	}
}
