package redact

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestStringAndBytes(t *testing.T) {
	r := New(Secret{"HF_TOKEN", "hf_Secret-Value-42"}, Secret{"QK_BEARER", "qk<bearer>&more"}, Secret{"EMPTY", ""})
	in := "env: HF_TOKEN=hf_Secret-Value-42 QK_BEARER=qk<bearer>&more"
	want := "env: HF_TOKEN=[redacted:HF_TOKEN] QK_BEARER=[redacted:QK_BEARER]"
	if got := r.String(in); got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
	// The JSON form of a value (encoding/json escapes <, > and &) is scrubbed too.
	b, _ := json.Marshal(map[string]string{"details": in})
	got := r.Bytes(b)
	if bytes.Contains(got, []byte("qk")) && bytes.Contains(got, []byte("bearer\\u003e")) || bytes.Contains(got, []byte("hf_Secret")) {
		t.Errorf("Bytes left a value: %s", got)
	}
	if !json.Valid(got) || !bytes.Contains(got, []byte("[redacted:QK_BEARER]")) {
		t.Errorf("Bytes = %s", got)
	}
	if names := r.Contains(b); len(names) != 2 || names[0] != "HF_TOKEN" || names[1] != "QK_BEARER" {
		t.Errorf("Contains = %v", names)
	}
	if names := r.Contains(got); len(names) != 0 {
		t.Errorf("Contains after scrubbing = %v", names)
	}
	var nilR *Redactor
	if nilR.String(in) != in || !nilR.Empty() {
		t.Error("a nil redactor changed its input")
	}
}

func TestCheck(t *testing.T) {
	if err := Check(Secret{"HF_TOKEN", "short"}); !errors.Is(err, ErrTooShort) || strings.Contains(err.Error(), "short\"") || !strings.Contains(err.Error(), "HF_TOKEN") {
		t.Errorf("Check(short) = %v", err)
	}
	for _, v := range []string{"", "12345678"} {
		if err := Check(Secret{"X", v}); err != nil {
			t.Errorf("Check(%q) = %v", v, err)
		}
	}
}

// TestWriterSplitsAnywhere writes a stream holding several values in random chunks (seeded) and
// expects exactly what String gives for the whole stream.
func TestWriterSplitsAnywhere(t *testing.T) {
	r := New(Secret{"A_TOKEN", "aaaa-secret-aaaa"}, Secret{"B_KEY", "bbbbbbbb"}, Secret{"C_PASSWORD", "aaaa-secret-aaaa-longer"})
	var stream strings.Builder
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 400; i++ {
		switch rng.IntN(5) {
		case 0:
			stream.WriteString("aaaa-secret-aaaa")
		case 1:
			stream.WriteString("bbbbbbbb")
		case 2:
			stream.WriteString("aaaa-secret-aaaa-longer")
		case 3:
			stream.WriteString("aaaa-secre") // a prefix that never completes
		default:
			stream.WriteString(" log line\n")
		}
	}
	want := r.String(stream.String())
	for trial := 0; trial < 50; trial++ {
		var out bytes.Buffer
		w := NewWriter(r, &out)
		s := []byte(stream.String())
		for len(s) > 0 {
			n := 1 + rng.IntN(40)
			n = min(n, len(s))
			if k, err := w.Write(s[:n]); err != nil || k != n {
				t.Fatal(k, err)
			}
			s = s[n:]
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if out.String() != want {
			t.Fatalf("trial %d: streamed output differs from String", trial)
		}
		if strings.Contains(out.String(), "bbbbbbbb") || strings.Contains(out.String(), "aaaa-secret-aaaa") {
			t.Fatalf("trial %d: a value survived", trial)
		}
	}
}
