package tokenize

import (
	"bytes"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/qualkit/qualkit/runner/load"
	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/tools/internal/gguf"
	"github.com/qualkit/qualkit/tools/internal/qualgguf"
)

// hostileSpecials is how many tokens the hostile vocabulary marks special, as in issue 27 item 7.
const hostileSpecials = 310

// hostileBytes is the tiny model's GGUF with hostileSpecials tokens from "▁" on (the space
// piece, every printable ASCII character, then the first word pieces) marked user-defined, so
// that nearly every byte of a prompt starts a special-token match.
func hostileBytes(t testing.TB) []byte {
	t.Helper()
	f, err := qualgguf.TinyLlama(qualgguf.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	for i, kv := range f.Metadata {
		if kv.Key != "tokenizer.ggml.token_type" {
			continue
		}
		types := append([]int32(nil), kv.Value.([]int32)...)
		first := 3 + 256 // after <unk>, <s>, </s> and the byte tokens
		for j := first; j < first+hostileSpecials; j++ {
			types[j] = 4 // user-defined
		}
		f.Metadata[i].Value = types
	}
	var b bytes.Buffer
	if _, err := gguf.Write(&b, f); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func hostile(t testing.TB) *Tokenizer {
	t.Helper()
	tk, err := Load(bytes.NewReader(hostileBytes(t)))
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

// promptOf is a synthetic prompt of at least n bytes (the generator's words, counted with the tiny
// vocabulary whatever tokenizer the caller tests), cut to n bytes.
func promptOf(t testing.TB, _ *Tokenizer, n int) string {
	t.Helper()
	var b []byte
	gen := tiny(t)
	for seed := uint64(1); len(b) < n; seed++ {
		ps, err := load.SyntheticTokens(seed, 1, 1000, 1000, gen, contract.TokenizerTemplateLines)
		if err != nil {
			t.Fatal(err)
		}
		b = append(b, ps[0].Text...)
		b = append(b, ' ')
	}
	return string(b[:n])
}

// BenchmarkCountHostile counts prompts of 1, 4, 16 and 64 KiB with the hostile vocabulary and
// the tiny one and reports ns/byte: linear counting keeps ns/byte flat across the sizes.
// ollama/hostile-N is ollama's own Encode with the hostile vocabulary (what TextTokens ran before)
// at 1 KiB and 2 KiB only.
func BenchmarkCountHostile(b *testing.B) {
	ref := reference(b, hostileBytes(b))
	for _, kb := range []int{1, 2} {
		text := promptOf(b, tiny(b), kb<<10)
		b.Run(fmt.Sprintf("ollama/hostile-%dKiB", kb), func(b *testing.B) {
			cpu := cpuTime()
			for b.Loop() {
				ref.Encode(text, false)
			}
			perByte(b, len(text), cpu)
		})
	}
	for _, v := range []struct {
		name string
		tk   *Tokenizer
	}{{"hostile", hostile(b)}, {"tiny", tiny(b)}} {
		for _, kb := range []int{1, 4, 16, 64} {
			text := promptOf(b, v.tk, kb<<10)
			b.Run(fmt.Sprintf("%s/%dKiB", v.name, kb), func(b *testing.B) {
				cpu := cpuTime()
				for b.Loop() {
					if _, err := v.tk.TextTokens(text); err != nil {
						b.Fatal(err)
					}
				}
				perByte(b, len(text), cpu)
			})
		}
	}
}

// perByte reports the wall and the CPU time (the process's user and system time since cpu, which
// a host shared with other work inflates less than the wall time) per byte counted.
func perByte(b *testing.B, n int, cpu time.Duration) {
	per := float64(b.N) * float64(n)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/per, "ns/byte")
	b.ReportMetric(float64((cpuTime()-cpu).Nanoseconds())/per, "cpu-ns/byte")
}

func cpuTime() time.Duration {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		return 0
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}
