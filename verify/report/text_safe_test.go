package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/qualkit/qualkit/schemas/contract"
)

// TestTextEscapesInputText: strings that came from evidence (a path, a scope naming a device, a
// finding, a warning, a table cell) reach the text report with their escape sequences, carriage
// returns, newlines and bidi overrides written visibly; the bytes printed hold none of them. The
// JSON form of the same view keeps the strings exact.
func TestTextEscapesInputText(t *testing.T) {
	const hostile = "H200\x1b[2J\x1b[H\x1b]0;t\x07\rverdict  verified\n\u202edeifirev\u2066"
	v := &View{ReportViewDoc: contract.ReportViewDoc{Schema: Schema, Verifier: "dev", Receipts: []Receipt{{
		Path:  "r/" + hostile + ".json",
		Scope: "device " + hostile,
		Verification: contract.ViewVerification{Summary: "rejected: " + hostile, Warnings: []string{hostile},
			Findings: []contract.ViewFinding{{Check: "signature", File: hostile, Message: hostile}}},
		Cases: []Case{{ID: "c", Rows: []Row{{Name: hostile}}}},
	}}, Comparisons: []Comparison{}}}
	var b bytes.Buffer
	if err := v.Text(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, bad := range []string{"\x1b", "\r", "\x07", "\u202e", "\u2066", "\nverdict  verified"} {
		if strings.Contains(out, bad) {
			t.Errorf("text report holds %q:\n%s", bad, out)
		}
	}
	for _, want := range []string{`H200\x1b[2J\x1b[H\x1b]0;t\x07\rverdict`, `\n\u202edeifirev\u2066`} {
		if !strings.Contains(out, want) {
			t.Errorf("text report lacks the visible escape %q:\n%s", want, out)
		}
	}
}

// TestHTMLEscapesBidiAndControls: the HTML page keeps markup out of values (html/template) and
// writes a bidi override, isolate, C1 control or ESC from evidence as a visible escape, so a
// browser cannot reorder a signed value before the reader's eyes; the page's own layout stays.
func TestHTMLEscapesBidiAndControls(t *testing.T) {
	const hostile = "H200\x1b[2J\u202edeifirev\u2066<b>x</b>\u009b"
	v := &View{ReportViewDoc: contract.ReportViewDoc{Schema: Schema, Verifier: "dev", Receipts: []Receipt{{
		Path:         "r/" + hostile + ".json",
		Scope:        "device " + hostile,
		Verification: contract.ViewVerification{Summary: "rejected: " + hostile, Warnings: []string{hostile}},
		Cases:        []Case{{ID: "c", Rows: []Row{{Name: hostile}}}},
	}}, Comparisons: []Comparison{}}}
	var b bytes.Buffer
	if err := v.HTML(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, bad := range []string{"\x1b", "\u202e", "\u2066", "\u009b", "<b>x</b>"} {
		if strings.Contains(out, bad) {
			t.Errorf("page holds %q", bad)
		}
	}
	if !strings.Contains(out, `H200\x1b[2J\u202edeifirev\u2066&lt;b&gt;x&lt;/b&gt;\u009b`) {
		t.Errorf("page lacks the visible escapes of the device name")
	}
	if !strings.Contains(out, "\n") {
		t.Error("the page's own line breaks were escaped")
	}
}
