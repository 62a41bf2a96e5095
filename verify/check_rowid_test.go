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
// request is scheduled, the seed the case's plus the index, the case's declared assertions), and
// a success answered 2xx; each edit, re-bound and re-signed, verified on 38f126b.
func TestRowIdentityResealed(t *testing.T) {
	const receipt = ".qualification/receipts/a-1.json"
	const rows = "cases/000-chat-stream-r000/rows/"
	k := newTestKey(t)
	cases := []struct {
		name string
		file string
		edit func(lines []map[string]any)
		text string
		want *Reason
	}{
		{"an index repeated", "c0002-r000.jsonl", func(l []map[string]any) { l[1]["index"] = json.Number("2") }, "index 2 is recorded twice", nil},
		{"the last index moved", "c0002-r000.jsonl", func(l []map[string]any) { l[2]["index"] = json.Number("3") }, "indexes up to 3", nil},
		{"a warmup's prompt relabelled", "c0001-r000.jsonl", func(l []map[string]any) { l[0]["prompt_id"] = "warmup-0001" }, "warmup 0 asks warmup-0001", nil},
		{"a warmup numbered after a measured request", "c0001-r000.jsonl", func(l []map[string]any) {
			l[0]["index"], l[2]["index"] = json.Number("2"), json.Number("0")
			l[0]["prompt_id"] = "warmup-0002"
		}, "the runner numbers warmups, then priming, then measured", nil},
		{"a warmup closed after the first measured request", "c0001-r000.jsonl", func(l []map[string]any) {
			l[0]["t_close_ns"] = json.Number("158400000")
		}, "before the row's warmup requests ended", nil},
		// A record's seed, status and assertion kinds.
		{"a seed not the case's plus the index", "c0002-r000.jsonl", func(l []map[string]any) { l[1]["seed"] = json.Number("1236") }, "the case's sampling seed 1234 plus its index is 1235", nil},
		{"a warmup's seed", "c0002-r000.jsonl", func(l []map[string]any) { l[0]["seed"] = nil }, "carries seed null", nil},
		{"a success answered 503", "c0002-r000.jsonl", func(l []map[string]any) { l[2]["status_code"] = json.Number("503") }, "HTTP status 503", ErrRequestFailed},
		{"an assertion dropped", "c0001-r000.jsonl", func(l []map[string]any) { l[1]["assertions"] = l[1]["assertions"].([]any)[1:] }, "records 1 assertions", nil},
		{"an assertion repeated", "c0001-r000.jsonl", func(l []map[string]any) {
			a := l[2]["assertions"].([]any)
			l[2]["assertions"] = append(a, a[0])
		}, "records 3 assertions", nil},
		{"a warmup with assertions", "c0001-r000.jsonl", func(l []map[string]any) { l[0]["assertions"] = l[1]["assertions"] }, "request 0 records 2 assertions", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := copyTree(t, frozenRoot)
			run := runDirOf(t, root, receipt)
			editRecordLines(t, filepath.Join(root, run, rows, tc.file), tc.edit)
			reseal(t, root, receipt, k)
			res := verifyAt(t, root, receipt, k.policy())
			want := tc.want
			if want == nil {
				want = ErrRowMismatch
			}
			if !hasFinding(res, CheckTolerances, want, tc.text) {
				t.Fatalf("not rejected (%s %q):%s", want.Code(), tc.text, findingsOf(res))
			}
		})
	}
}
