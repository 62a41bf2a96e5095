package verify

import (
	"encoding/json"
	"path/filepath"
	"testing"
)

// editRecordLines edits the request records of a JSON Lines file in place, line by line.
func editRecordLines(t *testing.T, path string, edit func(lines []map[string]any)) {
	t.Helper()
	doc := readDoc(t, path).([]any)
	lines := make([]map[string]any, len(doc))
	for i, l := range doc {
		lines[i] = l.(map[string]any)
	}
	edit(lines)
	out := make([]any, len(lines))
	for i, l := range lines {
		out[i] = l
	}
	writeDoc(t, path, out)
}

// TestRowIdentityResealed: a request's identity within its row is the runner's (indexes 0..n-1,
// warmups first asking the runner's warmup prompts, warmups done before the first measured
// request is scheduled); each edit, re-bound and re-signed, verified on 38f126b.
func TestRowIdentityResealed(t *testing.T) {
	const receipt = ".qualification/receipts/a-1.json"
	const rows = "cases/000-chat-stream-r000/rows/"
	k := newTestKey(t)
	cases := []struct {
		name string
		file string
		edit func(lines []map[string]any)
		text string
	}{
		{"an index repeated", "c0002-r000.jsonl", func(l []map[string]any) { l[1]["index"] = json.Number("2") }, "index 2 is recorded twice"},
		{"the last index moved", "c0002-r000.jsonl", func(l []map[string]any) { l[2]["index"] = json.Number("3") }, "indexes up to 3"},
		{"a warmup's prompt relabelled", "c0001-r000.jsonl", func(l []map[string]any) { l[0]["prompt_id"] = "warmup-0001" }, "warmup 0 asks warmup-0001"},
		{"a warmup numbered after a measured request", "c0001-r000.jsonl", func(l []map[string]any) {
			l[0]["index"], l[2]["index"] = json.Number("2"), json.Number("0")
			l[0]["prompt_id"] = "warmup-0002"
		}, "the runner numbers warmups, then priming, then measured"},
		{"a warmup closed after the first measured request", "c0001-r000.jsonl", func(l []map[string]any) {
			l[0]["t_close_ns"] = json.Number("158400000")
		}, "before the row's warmup requests ended"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := copyTree(t, frozenRoot)
			run := runDirOf(t, root, receipt)
			editRecordLines(t, filepath.Join(root, run, rows, tc.file), tc.edit)
			reseal(t, root, receipt, k)
			res := verifyAt(t, root, receipt, k.policy())
			if !hasFinding(res, CheckTolerances, ErrRowMismatch, tc.text) {
				t.Fatalf("not rejected (row_mismatch %q):%s", tc.text, findingsOf(res))
			}
		})
	}
}
