package sim_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/qualkit/qualkit/runner/sim"
)

func TestGenerate(t *testing.T) {
	hello := sim.Prompt{Text: "hello world"}
	base := sim.Generate(sim.GenSpec{Prompt: hello, MaxTokens: 4})
	if len(base.Text) != 4*sim.TokenWidth || base.Tokens != 4 || base.Finish != sim.FinishLength {
		t.Fatalf("base = %+v", base)
	}
	tok := func(k int) string { return base.TokenText(k) }
	for k := range 4 {
		want := []byte("00000 ")
		v := (base.Start + k) % 100000
		for i := 4; i >= 0; i-- {
			want[i] = byte('0' + v%10)
			v /= 10
		}
		if tok(k) != string(want) {
			t.Fatalf("token %d = %q, want %q", k, tok(k), want)
		}
	}

	tests := []struct {
		name       string
		spec       sim.GenSpec
		text       string // "" means: compare only tokens and finish
		tokens     int
		finish     string
		sameAsBase bool
	}{
		{"same inputs, same output", sim.GenSpec{Prompt: hello, MaxTokens: 4}, base.Text, 4, "length", true},
		{"max_tokens only truncates", sim.GenSpec{Prompt: hello, MaxTokens: 2}, base.Text[:12], 2, "length", true},
		{"stop at a token boundary", sim.GenSpec{Prompt: hello, MaxTokens: 4, Stop: []string{tok(2)}}, tok(0) + tok(1), 3, "stop", true},
		{"stop inside a token", sim.GenSpec{Prompt: hello, MaxTokens: 4, Stop: []string{tok(1)[3:6]}}, tok(0) + tok(1)[:3], 2, "stop", true},
		{"stop spanning tokens", sim.GenSpec{Prompt: hello, MaxTokens: 4, Stop: []string{tok(1)[4:] + tok(2)[:2]}}, tok(0) + tok(1)[:4], 3, "stop", true},
		{"earliest completed stop wins", sim.GenSpec{Prompt: hello, MaxTokens: 4, Stop: []string{tok(3), tok(1)}}, tok(0), 2, "stop", true},
		{"empty stop ignored", sim.GenSpec{Prompt: hello, MaxTokens: 2, Stop: []string{""}}, base.Text[:12], 2, "length", true},
		{"stop not reached", sim.GenSpec{Prompt: hello, MaxTokens: 2, Stop: []string{"x"}}, base.Text[:12], 2, "length", true},
		{"eos before max_tokens", sim.GenSpec{Prompt: hello, MaxTokens: 4, EOSAfter: 3}, base.Text[:18], 3, "stop", true},
		{"ignore_eos runs to max_tokens", sim.GenSpec{Prompt: hello, MaxTokens: 4, EOSAfter: 3, IgnoreEOS: true}, base.Text, 4, "length", true},
		{"eos at max_tokens is length", sim.GenSpec{Prompt: hello, MaxTokens: 3, EOSAfter: 3}, base.Text[:18], 3, "length", true},
		{"model seed changes output", sim.GenSpec{ModelSeed: 1, Prompt: hello, MaxTokens: 4}, "", 4, "length", false},
		{"request seed changes output", sim.GenSpec{RequestSeed: 7, Prompt: hello, MaxTokens: 4}, "", 4, "length", false},
		{"prompt changes output", sim.GenSpec{Prompt: sim.Prompt{Text: "hello  world"}, MaxTokens: 4}, "", 4, "length", false},
		{"chat differs from text", sim.GenSpec{Prompt: sim.Prompt{Chat: true, Messages: []sim.Message{{Role: "user", Content: "hello world"}}}, MaxTokens: 4}, "", 4, "length", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := sim.Generate(tc.spec)
			if g.Tokens != tc.tokens || g.Finish != tc.finish {
				t.Fatalf("tokens %d finish %q, want %d %q", g.Tokens, g.Finish, tc.tokens, tc.finish)
			}
			if tc.text != "" && g.Text != tc.text {
				t.Fatalf("text %q, want %q", g.Text, tc.text)
			}
			if (g.Start == base.Start) != tc.sameAsBase {
				t.Fatalf("start %d vs base %d: same=%v, want %v", g.Start, base.Start, g.Start == base.Start, tc.sameAsBase)
			}
		})
	}
}

// TestGenerateGolden pins the token function: a change here changes every recorded output.
func TestGenerateGolden(t *testing.T) {
	g := sim.Generate(sim.GenSpec{ModelSeed: 20261130, RequestSeed: 1234, Prompt: sim.Prompt{Text: "hello world"}, MaxTokens: 3})
	c := sim.Generate(sim.GenSpec{Prompt: sim.Prompt{Chat: true, Messages: []sim.Message{{Role: "system", Content: "be brief"}, {Role: "user", Content: "hi"}}}, MaxTokens: 2})
	if got := g.Text + "|" + c.Text; got != "32341 32342 32343 |20763 20764 " {
		t.Fatalf("golden outputs changed: %q", got)
	}
}

func TestPromptTokens(t *testing.T) {
	tests := []struct {
		p    sim.Prompt
		want int
	}{
		{sim.Prompt{Text: ""}, 1},
		{sim.Prompt{Text: "hello world"}, 3},
		{sim.Prompt{Text: "  a\tb\nc\u00a0d  "}, 5},
		{sim.Prompt{Chat: true, Messages: []sim.Message{{Role: "user", Content: "hello world"}}}, 1 + 3 + 2},
		{sim.Prompt{Chat: true, Messages: []sim.Message{{Role: "system", Content: "be brief"}, {Role: "user", Content: ""}}}, 1 + 5 + 3},
	}
	for _, tc := range tests {
		if got := tc.p.Tokens(); got != tc.want {
			t.Errorf("%+v: %d tokens, want %d", tc.p, got, tc.want)
		}
		if !tc.p.Chat && tc.p.Tokens() != 1+len(strings.Fields(tc.p.Text)) {
			t.Errorf("%q: count differs from strings.Fields", tc.p.Text)
		}
	}
}

func TestFaultSet(t *testing.T) {
	valid := [][]string{
		{"exit-before-ready"}, {"never-ready"}, {"models-without-id"}, {"slow-models=2s"}, {"crash-after-events=3"},
		{"ignore-sigterm"}, {"slow-shutdown=1.5s"}, {"setsid-grandchild"}, {"grandchild-keeps-listener"},
		{"malformed-json@2"}, {"missing-data-prefix@5"}, {"missing-usage"}, {"inconsistent-usage"},
		{"no-done"}, {"stall=250ms@3"}, {"huge-event=2097152@2"}, {"http-429=0.25"}, {"http-500=0.5"},
		{"missing-usage", "no-done", "stall=1s@4", "http-429=0.1", "http-500=0.2"},
	}
	for _, specs := range valid {
		var f sim.Faults
		for _, s := range specs {
			if err := f.Set(s); err != nil {
				t.Fatalf("Set(%q): %v", s, err)
			}
		}
		if got := strings.Join(f.Specs(), " "); got != strings.Join(specs, " ") {
			t.Errorf("Specs() = %q, want %q", got, strings.Join(specs, " "))
		}
	}
	var f sim.Faults
	for spec, want := range map[string]sim.Faults{
		"malformed-json":      {MalformedJSONAt: sim.DefaultFaultEvent},
		"stall=2s":            {Stall: 2e9, StallAt: sim.DefaultFaultEvent},
		"huge-event=2MiB":     {HugeEventBytes: 2 << 20, HugeEventAt: sim.DefaultFaultEvent},
		"huge-event=100KiB@7": {HugeEventBytes: 100 << 10, HugeEventAt: 7},
	} {
		f = sim.Faults{}
		if err := f.Set(spec); err != nil || f != want {
			t.Errorf("Set(%q) = %+v, %v; want %+v", spec, f, err, want)
		}
	}
	invalid := []string{
		"", "nope", "never-ready=1", "never-ready@2", "crash-after-events", "crash-after-events=0",
		"crash-after-events=x", "slow-shutdown=-1s", "slow-shutdown=forever", "stall=1s@0", "stall=1s@x",
		"huge-event=0", "huge-event=1GiB", "huge-event=999MiB", "http-429=1.5", "http-429=-0.1", "http-500=NaN",
		"missing-usage@3",
	}
	for _, spec := range invalid {
		var f sim.Faults
		if err := f.Set(spec); !errors.Is(err, sim.ErrConfig) {
			t.Errorf("Set(%q) = %v, want ErrConfig", spec, err)
		}
	}
	f = sim.Faults{}
	if err := f.Set("http-429=0.6"); err != nil {
		t.Fatal(err)
	}
	if err := f.Set("http-500=0.6"); !errors.Is(err, sim.ErrConfig) {
		t.Errorf("fractions above 1 in total accepted: %v", err)
	}
	for _, fi := range sim.FaultCatalogue() {
		if fi.Name == "" || fi.Syntax == "" || fi.Doc == "" || !strings.HasPrefix(fi.Syntax, fi.Name) {
			t.Errorf("catalogue entry %+v incomplete", fi)
		}
	}
}
