package schemas

import (
	"encoding/json"
	"github.com/qualkit/qualkit/schemas/rules"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestShellEvalCorpus runs the shell-evaluation rule over the argv corpus: every refused vector is
// refused at the stated element, every accepted vector passes.
func TestShellEvalCorpus(t *testing.T) {
	var refused []struct {
		Argv    []string `json:"argv"`
		Element int      `json:"element"`
	}
	var accepted [][]string
	for name, v := range map[string]any{"refused.json": &refused, "accepted.json": &accepted} {
		b, err := os.ReadFile(filepath.Join("testdata", "argv", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	if len(refused) < 50 || len(accepted) < 20 {
		t.Fatalf("corpus too small: %d refused, %d accepted", len(refused), len(accepted))
	}
	for _, tc := range refused {
		e := rules.ShellEval(tc.Argv)
		switch {
		case e == nil:
			t.Errorf("%q: accepted, want refused at element %d", tc.Argv, tc.Element)
		case e.Element != tc.Element:
			t.Errorf("%q: refused at element %d (%s), want %d", tc.Argv, e.Element, e, tc.Element)
		}
	}
	for _, argv := range accepted {
		if e := rules.ShellEval(argv); e != nil {
			t.Errorf("%q: refused at element %d (%s), want accepted", argv, e.Element, e)
		}
	}
}

// TestShellEvalRuleMessage checks the rule through the contract: a launch recipe whose command
// reaches a shell through wrappers is invalid, at the element, with a message that names the
// shell, the wrappers and the fix.
func TestShellEvalRuleMessage(t *testing.T) {
	d := load(t, "launch-recipe.json")
	set(t, d, "/command", []any{"nice", "-n", "5", "env", "-u", "X", "bash", "-euxc", "serve"})
	out, err := CheckDocument(roundTrip(t, d))
	if err != nil {
		t.Fatal(err)
	}
	var msgs []string
	for _, v := range out.Violations {
		if v.Pointer == "/command/7" {
			msgs = append(msgs, v.Error())
		}
	}
	if len(msgs) != 1 {
		t.Fatalf("violations %v, want one at /command/7", out.Violations)
	}
	for _, want := range []string{`"-euxc"`, "bash", "nice, env", "argv vector"} {
		if !strings.Contains(msgs[0], want) {
			t.Errorf("message %q lacks %q", msgs[0], want)
		}
	}
}

func TestShellEvalDepthBounded(t *testing.T) {
	argv := []string{}
	for i := 0; i < 1000; i++ {
		argv = append(argv, "env")
	}
	argv = append(argv, "bin/server")
	if e := rules.ShellEval(argv); e == nil {
		t.Error("1000 nested env wrappers: accepted, want refused (the rule looks through a bounded number)")
	}
}
