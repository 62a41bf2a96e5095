package tools_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// docs/quickstart.md is executed: every ```sh block runs, in the order of the page, in one bash
// script (set -euo pipefail) that starts in the repository root with a fresh temporary HOME (the
// go command's build and module caches stay the test's own: goCaches), and
// the ```text block that follows a command block lists key lines of its real output, in order.
//
// A part marker, an HTML comment `<!-- quickstart: PART -->`, starts a part: "setup" (build the
// CLIs), "qualsim" (the first campaign) and "ollama" (a real engine). TestQuickstart/qualsim runs
// setup and qualsim; TestQuickstart/ollama runs the whole page, and only where make e2e-real has
// built .tools/ollama/bin/ollama (scripts/e2e-real.sh runs it there, so CI executes it).
//
// Matching an expected line against the output: both sides are normalized (the qualkit checkout
// becomes ~/qualkit, the temporary HOME ~, hex digests H, signed numbers N, runs of blanks one
// blank, terminal control sequences nothing), a line that is only "..." skips any number of
// output lines, and "..." inside a line matches any text there. QUALKIT_QUICKSTART_UPDATE=1
// rewrites the page's output lines from the run.

const quickstartDoc = "docs/quickstart.md"

type quickstartBlock struct {
	part     string
	line     int    // line of the opening fence in the page
	script   string // the command block
	expected []string
	outLine  int // index in the page's lines of the first expected line
}

var quickstartMarker = regexp.MustCompile(`^<!-- quickstart: ([a-z]+) -->$`)

func parseQuickstart(t *testing.T, page string) []quickstartBlock {
	t.Helper()
	var blocks []quickstartBlock
	lines := strings.Split(page, "\n")
	part := ""
	last := -1 // index in blocks of a command block that a ```text block may still follow
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if m := quickstartMarker.FindStringSubmatch(strings.TrimSpace(l)); m != nil {
			part, last = m[1], -1
			continue
		}
		if !strings.HasPrefix(l, "```") {
			if strings.TrimSpace(l) != "" {
				last = -1
			}
			continue
		}
		info := strings.TrimPrefix(l, "```")
		start := i
		var body []string
		for i++; i < len(lines) && lines[i] != "```"; i++ {
			body = append(body, lines[i])
		}
		if i == len(lines) {
			t.Fatalf("%s:%d: unterminated code block", quickstartDoc, start+1)
		}
		switch info {
		case "sh":
			if part == "" {
				t.Fatalf("%s:%d: a command block before any <!-- quickstart: PART --> marker", quickstartDoc, start+1)
			}
			blocks = append(blocks, quickstartBlock{part: part, line: start + 1, script: strings.Join(body, "\n")})
			last = len(blocks) - 1
		case "text":
			if last < 0 {
				t.Fatalf("%s:%d: an output block that follows no command block", quickstartDoc, start+1)
			}
			blocks[last].expected, blocks[last].outLine = body, start+1
			last = -1
		default:
			t.Fatalf("%s:%d: code block %q: the page has only ```sh (executed) and ```text (its output) blocks", quickstartDoc, start+1, info)
		}
	}
	return blocks
}

var (
	quickstartHex    = regexp.MustCompile(`[0-9a-f]*[0-9][0-9a-f]*[a-f][0-9a-f]*|[0-9a-f]*[a-f][0-9a-f]*[0-9][0-9a-f]*`)
	quickstartNumber = regexp.MustCompile(`[+-]?[0-9]+(\.[0-9]+)?`) // a sign is part of a number
	quickstartBlank  = regexp.MustCompile(`\s+`)
	// A terminal's control sequences (ollama create's spinner) show as nothing.
	quickstartANSI = regexp.MustCompile("\x1b\\[[0-9;?]*[A-Za-z]")
)

func normalizeQuickstart(s string) string {
	s = quickstartANSI.ReplaceAllString(s, "")
	s = quickstartHex.ReplaceAllStringFunc(s, func(h string) string {
		if len(h) < 7 {
			return h
		}
		return "H"
	})
	s = quickstartNumber.ReplaceAllString(s, "N")
	return strings.TrimSpace(quickstartBlank.ReplaceAllString(s, " "))
}

// matchQuickstartLine: want may hold "..." wildcards.
func matchQuickstartLine(want, got string) bool {
	parts := strings.Split(want, "...")
	if len(parts) == 1 {
		return want == got
	}
	for i, p := range parts {
		p = strings.TrimSpace(p)
		switch {
		case i == 0:
			if !strings.HasPrefix(got, p) {
				return false
			}
			got = got[len(p):]
		case i == len(parts)-1:
			return strings.HasSuffix(got, p)
		default:
			k := strings.Index(got, p)
			if k < 0 {
				return false
			}
			got = got[k+len(p):]
		}
	}
	return true
}

// checkQuickstartOutput: every expected line, in order, matches an output line; a "..." line lets
// output lines pass between, otherwise the next expected line must match the next output line.
func checkQuickstartOutput(expected []string, output string) error {
	_, err := matchQuickstartOutput(expected, output)
	return err
}

// matchQuickstartOutput also returns, for each expected line, the output line it matched (blanks
// at its end trimmed), or the expected line itself where it holds "..." or is empty.
func matchQuickstartOutput(expected []string, output string) ([]string, error) {
	var got, raw []string
	for _, l := range strings.Split(output, "\n") {
		if n := normalizeQuickstart(l); n != "" {
			got = append(got, n)
			raw = append(raw, strings.TrimRight(quickstartANSI.ReplaceAllString(l, ""), " \t"))
		}
	}
	matched := make([]string, len(expected))
	j := 0
	skip := false
	for i, w := range expected {
		matched[i] = w
		if strings.TrimSpace(w) == "..." {
			skip = true
			continue
		}
		want := normalizeQuickstart(w)
		if want == "" {
			continue
		}
		for {
			if j >= len(got) {
				return nil, fmt.Errorf("the output has no line matching %q (normalized %q) where the page shows it", w, want)
			}
			if matchQuickstartLine(want, got[j]) {
				if !strings.Contains(w, "...") {
					matched[i] = raw[j]
				}
				j++
				break
			}
			if !skip {
				return nil, fmt.Errorf("the page shows %q (normalized %q) but the output has %q there", w, want, got[j])
			}
			j++
		}
		skip = false
	}
	return matched, nil
}

func TestQuickstartMatcher(t *testing.T) {
	out := "wrote /tmp/h/keys/qualkit.key (unencrypted)\nrow 1/2 done: chat c=1 r=0: 8/8 requests ended, 0 failed, 1.598 s\nreceipt  a-20261201t205916315484z-cpu-ead825ae7c-v1\nverdict  verified\n"
	for _, tc := range []struct {
		expected []string
		ok       bool
	}{
		{[]string{"wrote /tmp/h/keys/qualkit.key (unencrypted)", "row 2/3 done: chat c=4 r=0: 9/9 requests ended, 0 failed, 7.2 s"}, true},
		{[]string{"...", "verdict verified"}, true},
		{[]string{"wrote ... (unencrypted)", "row ... failed, ...", "receipt a-20260101t000000000000z-cpu-0123abcdef-v1"}, true},
		{[]string{"verdict  verified"}, false},                                                 // not the first line, and no "..."
		{[]string{"...", "verdict  refused"}, false},                                           // no such line
		{[]string{"row 1/2 done: chat c=1 r=0: 8/8 requests ended, 1 failed, 1.598 s"}, false}, // a word differs
		{[]string{"...", "receipt a-20261201t205916315484z-cpu-my-v1"}, false},
	} {
		err := checkQuickstartOutput(tc.expected, out)
		if (err == nil) != tc.ok {
			t.Errorf("%q: err %v, want ok %v", tc.expected, err, tc.ok)
		}
	}
	// A terminal's control sequences are not text.
	if err := checkQuickstartOutput([]string{"success"}, "success \x1b[K\x1b[?25h\x1b[?2026l\n"); err != nil {
		t.Error(err)
	}
}

func TestQuickstart(t *testing.T) {
	repo, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(repo, quickstartDoc))
	if err != nil {
		t.Fatal(err)
	}
	blocks := parseQuickstart(t, string(raw))
	count := map[string]int{}
	for _, b := range blocks {
		count[b.part]++
	}
	for _, p := range []string{"setup", "qualsim", "ollama"} {
		if count[p] == 0 {
			t.Fatalf("%s has no command block in part %q", quickstartDoc, p)
		}
	}
	if len(count) != 3 {
		t.Fatalf("%s: parts %v, want setup, qualsim and ollama", quickstartDoc, count)
	}
	t.Run("qualsim", func(t *testing.T) {
		runQuickstart(t, repo, blocks, "setup", "qualsim")
	})
	t.Run("ollama", func(t *testing.T) {
		if _, err := os.Stat(filepath.Join(repo, ".tools/ollama/bin/ollama")); err != nil {
			t.Skip("skipped: the ollama part needs .tools/ollama/bin/ollama, which make e2e-real builds (and then runs this part)")
		}
		runQuickstart(t, repo, blocks, "setup", "qualsim", "ollama")
	})
}

func runQuickstart(t *testing.T, repo string, all []quickstartBlock, parts ...string) {
	home := t.TempDir()
	var blocks []quickstartBlock
	var script strings.Builder
	script.WriteString("set -euo pipefail\n")
	for _, b := range all {
		for _, p := range parts {
			if b.part == p {
				fmt.Fprintf(&script, "printf '\\n@@quickstart-block %d@@\\n'\n%s\n", len(blocks), b.script)
				blocks = append(blocks, b)
			}
		}
	}
	fmt.Fprintf(&script, "printf '\\n@@quickstart-block %d@@\\n'\n", len(blocks))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script.String())
	cmd.Dir = repo
	env := []string{"HOME=" + home, "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=You", "GIT_AUTHOR_EMAIL=you@example.invalid",
		"GIT_COMMITTER_NAME=You", "GIT_COMMITTER_EMAIL=you@example.invalid"}
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch {
		case name == "HOME", strings.HasPrefix(name, "GIT_"), strings.HasPrefix(name, "OLLAMA_"),
			name == "QUALKIT_PASSWORD", name == "COSIGN_PASSWORD", name == "MAKEFLAGS", name == "MAKELEVEL":
			continue
		}
		env = append(env, kv)
	}
	cmd.Env = append(env, goCaches(t)...)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	runErr := cmd.Run()
	text := out.String()
	text = strings.ReplaceAll(text, repo, "~/qualkit")
	text = strings.ReplaceAll(text, home, "~")
	outputs := make([]string, len(blocks)+1)
	n := -1
	for _, l := range strings.Split(text, "\n") {
		var k int
		if _, err := fmt.Sscanf(l, "@@quickstart-block %d@@", &k); err == nil && strings.HasPrefix(l, "@@") {
			n = k
			continue
		}
		if n >= 0 && n < len(outputs) {
			outputs[n] += l + "\n"
		}
	}
	if runErr != nil {
		// The block that ran last is the one that failed.
		for i := len(blocks) - 1; i >= 0; i-- {
			if strings.Contains(text, fmt.Sprintf("@@quickstart-block %d@@", i)) {
				t.Fatalf("%s:%d: the command block failed (%v); its output:\n%s", quickstartDoc, blocks[i].line, runErr, outputs[i])
			}
		}
		t.Fatalf("the page's script failed before its first block: %v\n%s", runErr, text)
	}
	// QUALKIT_QUICKSTART_CAPTURE=FILE writes every block's real output there, for refreshing the
	// page's output blocks from a real run.
	if f := os.Getenv("QUALKIT_QUICKSTART_CAPTURE"); f != "" {
		var capture strings.Builder
		for i, b := range blocks {
			fmt.Fprintf(&capture, "=== %s:%d (%s)\n%s\n", quickstartDoc, b.line, b.part, outputs[i])
		}
		if err := os.WriteFile(f, []byte(capture.String()), 0o644); err != nil {
			t.Error(err)
		}
	}
	// QUALKIT_QUICKSTART_UPDATE=1: where every block matched, rewrite the page's output lines
	// (those without "...") with the lines of this real run.
	page, err := os.ReadFile(filepath.Join(repo, quickstartDoc))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(page), "\n")
	for i, b := range blocks {
		m, err := matchQuickstartOutput(b.expected, outputs[i])
		if err != nil {
			t.Errorf("%s:%d: %v\nthe block's output:\n%s", quickstartDoc, b.line, err, outputs[i])
			continue
		}
		copy(lines[b.outLine:], m)
	}
	if os.Getenv("QUALKIT_QUICKSTART_UPDATE") == "1" && !t.Failed() {
		if err := os.WriteFile(filepath.Join(repo, quickstartDoc), []byte(strings.Join(lines, "\n")), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("rewrote the output blocks of %s from this run", quickstartDoc)
	}
}

// goCaches is GOCACHE and GOMODCACHE as this test's go command has them. The page's fresh HOME
// would otherwise move both under it: `make build` would download every module and compile the
// CLIs cold, minutes on two cores, and the page would test the network and the compiler rather
// than its own commands (the commands and their output are the same with a warm cache).
func goCaches(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOCACHE", "GOMODCACHE").Output()
	if err != nil {
		t.Fatalf("go env GOCACHE GOMODCACHE: %v", err)
	}
	dirs := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(dirs) != 2 || dirs[0] == "" || dirs[1] == "" {
		t.Fatalf("go env GOCACHE GOMODCACHE: %q", out)
	}
	return []string{"GOCACHE=" + dirs[0], "GOMODCACHE=" + dirs[1]}
}
