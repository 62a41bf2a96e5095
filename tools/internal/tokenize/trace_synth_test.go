package tokenize

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/qualkit/qualkit/runner/load"
	"github.com/qualkit/qualkit/schemas/contract"
)

// realMooncakeDigest is the sha256 of kvcache-ai/Mooncake's FAST25-release/traces/
// conversation_trace.jsonl (runner/load's TestRealMooncakeConversationTrace checks the same).
const realMooncakeDigest = "b8cbb061a85206d729d91cdc2981f43c9e0d99209dce588d3af5f7934408b9df"

// realMooncake2000 digests the ids and texts (each followed by a NUL) of the first 2,000 entries
// of that trace synthesised token-exact with the tiny vocabulary, as 38f126b's synthesis (before
// the piece cache and the block table) wrote them.
const realMooncake2000 = "7d153984cc43a86bef3794641261127a9bc2a7198c8fbf4c3b585a3fd2f0a556"

// TestRealMooncakeTokenSynthesis synthesises the first 2,000 entries (QUALKIT_MOONCAKE_N, when
// set, another count) of the real Mooncake conversation trace token-exact with the tiny vocabulary
// when QUALKIT_MOONCAKE_CONVERSATION names a copy (it is not in the repository:
// docs/performance.md says how to get it), and logs the time and CPU it took
// (docs/performance.md "Trace replay at scale"): every prompt must count exactly its
// input_length, and the 2,000 must be the bytes 38f126b wrote.
func TestRealMooncakeTokenSynthesis(t *testing.T) {
	path := os.Getenv("QUALKIT_MOONCAKE_CONVERSATION")
	if path == "" {
		t.Skip("set QUALKIT_MOONCAKE_CONVERSATION to a copy of Mooncake's FAST25-release/traces/conversation_trace.jsonl")
	}
	n := 2000
	if s := os.Getenv("QUALKIT_MOONCAKE_N"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil || n < 1 {
			t.Fatalf("QUALKIT_MOONCAKE_N=%q: want a count of entries", s)
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != realMooncakeDigest {
		t.Fatalf("%s has digest %x, not the Mooncake conversation trace's %s", path, sum, realMooncakeDigest)
	}
	es, err := load.ImportMooncake(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	es = es[:min(n, len(es))]
	tokens := int64(0)
	for _, e := range es {
		tokens += e.InputLength
	}
	tk := tiny(t)
	cpu := func() time.Duration {
		var ru syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	cpu0, start := cpu(), time.Now()
	ps, err := load.TraceTokenPrompts(context.Background(), es, 512, 1, tk, contract.TokenizerTemplateLines, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d entries, %d tokens: synthesised in %v, %v of CPU", len(ps), tokens, time.Since(start).Round(time.Millisecond), (cpu() - cpu0).Round(time.Millisecond))
	h := sha256.New()
	for i, p := range ps {
		if got, _ := tk.PromptTokens(contract.TokenizerTemplateLines, []string{"user"}, []string{p.Text}); got != es[i].InputLength {
			t.Fatalf("entry %d: %d tokens, want %d", i, got, es[i].InputLength)
		}
		fmt.Fprintf(h, "%s\x00%s\x00", p.ID, p.Text)
	}
	if got := hex.EncodeToString(h.Sum(nil)); n == 2000 && got != realMooncake2000 {
		t.Fatalf("the 2,000 prompts digest to %s, 38f126b's to %s", got, realMooncake2000)
	}
}
