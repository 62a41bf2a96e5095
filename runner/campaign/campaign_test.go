package campaign

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/qualkit/qualkit/schemas/contract"
)

func TestReceiptIDFor(t *testing.T) {
	start := time.Date(2026, 11, 30, 14, 13, 1, 123456789, time.UTC)
	id := ReceiptIDFor(start, "cpu", "demo-host", "qualsim-demo", "cpu-reference")
	if !strings.HasPrefix(id, "20261130t141301123456z-cpu-demo-host-qualsim-demo-") || !strings.HasSuffix(id, "-v1") {
		t.Fatalf("id %s", id)
	}
	if !regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,127}$`).MatchString(id) {
		t.Fatalf("id %s is not a result id", id)
	}
	if other := ReceiptIDFor(start, "cpu", "demo-host", "qualsim-demo", "other"); other == id {
		t.Error("the variant does not change the id")
	}
	long := ReceiptIDFor(start, "cuda", strings.Repeat("h", 64), strings.Repeat("w", 128), "v")
	if len(long) > 128 || strings.Contains(long, strings.Repeat("h", 33)) || strings.Contains(long, strings.Repeat("w", 25)) {
		t.Errorf("long ids are not truncated: %s", long)
	}
	later := ReceiptIDFor(start.Add(time.Microsecond), "cpu", "demo-host", "qualsim-demo", "cpu-reference")
	if !(id < later) {
		t.Error("ids do not sort by start time")
	}
}

func variables(t *testing.T) []contract.Variable {
	var vs []contract.Variable
	err := json.Unmarshal([]byte(`[
	 {"name":"count","description":"d","type":"integer","required":false,"default":3,"constraints":{"allowed_values":[],"minimum":1,"maximum":10,"pattern":null}},
	 {"name":"label","description":"d","type":"string","required":true,"default":null,"constraints":{"allowed_values":[],"minimum":null,"maximum":null,"pattern":"[a-z]+"}},
	 {"name":"mode","description":"d","type":"string","required":false,"default":"fast","constraints":{"allowed_values":["fast","slow"],"minimum":null,"maximum":null,"pattern":null}},
	 {"name":"ratio","description":"d","type":"number","required":false,"default":null,"constraints":{"allowed_values":[],"minimum":0,"maximum":1,"pattern":null}},
	 {"name":"verbose","description":"d","type":"boolean","required":false,"default":false,"constraints":{"allowed_values":[],"minimum":null,"maximum":null,"pattern":null}}]`), &vs)
	if err != nil {
		t.Fatal(err)
	}
	return vs
}

func TestResolveVariables(t *testing.T) {
	got, err := ResolveVariables(variables(t), []string{"label=abc", "ratio=0.5", "verbose=true"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"count": int64(3), "label": "abc", "mode": "fast", "ratio": 0.5, "verbose": true}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %#v, want %#v", k, got[k], v)
		}
	}
	for _, tc := range []struct{ args []string }{
		{[]string{"label=abc", "colour=red"}},    // unknown
		{[]string{"label=abc", "count=x"}},       // not an integer
		{[]string{"label=abc", "count=11"}},      // above maximum
		{[]string{"label=ABC"}},                  // pattern is a full match
		{[]string{"label=abc", "mode=medium"}},   // not allowed
		{[]string{"label=abc", "ratio=NaN"}},     // not finite
		{[]string{"label=abc", "verbose=yes"}},   // not a boolean
		{[]string{}},                             // required label missing
		{[]string{"label=a", "label=b"}},         // twice
		{[]string{"label"}},                      // not NAME=VALUE
		{[]string{"label=abc", "seed=1"}},        // built in
		{[]string{"label=abc", "model_path=/m"}}, // built in
	} {
		if _, err := ResolveVariables(variables(t), tc.args); !errors.Is(err, ErrVariable) {
			t.Errorf("%v: err = %v, want ErrVariable", tc.args, err)
		}
	}
}

func TestSubstitute(t *testing.T) {
	vals := map[string]string{"seed": "7", "label": "x"}
	for in, want := range map[string]string{"${seed}": "7", "${label}": "x", "--flag": "--flag", "a${seed}": "a${seed}"} {
		if got, err := substitute(in, vals); err != nil || got != want {
			t.Errorf("substitute(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := substitute("${model_path}", vals); !errors.Is(err, ErrVariable) {
		t.Errorf("unset placeholder: %v", err)
	}
}

func TestWriteNewNeverReplaces(t *testing.T) {
	root := t.TempDir()
	if err := writeNew(root, "a/b/c.json", []byte("one")); err != nil {
		t.Fatal(err)
	}
	if err := writeNew(root, "a/b/c.json", []byte("two")); !errors.Is(err, ErrPath) {
		t.Fatalf("second write: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "a/b/c.json")); string(b) != "one" {
		t.Fatalf("replaced: %q", b)
	}
	left, _ := filepath.Glob(filepath.Join(root, "a/b/.tmp-*"))
	if len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
	if err := writeNew(root, "a/../../escape.json", nil); !errors.Is(err, ErrPath) {
		t.Errorf(".. accepted: %v", err)
	}
	if err := writeNew(root, "/abs.json", nil); !errors.Is(err, ErrPath) {
		t.Errorf("absolute accepted: %v", err)
	}
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	if err := writeNew(root, "link/x.json", nil); !errors.Is(err, ErrPath) {
		t.Errorf("symlink accepted: %v", err)
	}
	if entries, _ := os.ReadDir(outside); len(entries) > 0 {
		t.Errorf("wrote through the symlink: %v", entries)
	}
}
