package trace

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// bailianSample follows the published format (alibaba-edu/qwen-bailian-usagetraces-anon README):
// chat 159's second turn is chat 160, whose third is 161; chat 170 is on its own; lines are not in
// time order, and chat 161's equal-time line comes first.
const bailianSample = `{"chat_id": 160, "parent_chat_id": 159, "timestamp": 62.5, "input_length": 676, "output_length": 80, "type": "text", "turn": 2, "hash_ids": [1, 2, 3, 4]}
{"chat_id": 161, "parent_chat_id": 160, "timestamp": 62.5, "input_length": 800, "output_length": 20, "type": "text", "turn": 3}
{"chat_id": 159, "parent_chat_id": -1, "timestamp": 61.114, "input_length": 521, "output_length": 132, "type": "text", "turn": 1, "hash_ids": [1, 2]}
{"chat_id": 170, "parent_chat_id": -1, "timestamp": 61.9994, "input_length": 12, "output_length": 3, "type": "search", "turn": 1}
`

// TestImportBailian: entries in time order (a chat's turns in turn order at equal times), ms
// from the first (rounded), parents by index; the result reads back through Read and Write.
func TestImportBailian(t *testing.T) {
	es, info, err := ImportBailian(strings.NewReader(bailianSample))
	if err != nil {
		t.Fatal(err)
	}
	type want struct {
		ms, in int64
		parent int
	}
	wants := []want{{0, 521, -1}, {885, 12, -1}, {1386, 676, 0}, {1386, 800, 2}}
	if len(es) != len(wants) {
		t.Fatalf("%d entries", len(es))
	}
	for k, w := range wants {
		p := int(es[k].After - 1)
		if es[k].TimestampMs != w.ms || es[k].InputLength != w.in || p != w.parent {
			t.Errorf("entry %d: %+v parent %d, want %+v", k, es[k], p, w)
		}
	}
	if info.Roots != 2 || info.Orphans != 0 || info.MaxTurn != 3 {
		t.Errorf("info %+v", info)
	}
	var buf bytes.Buffer
	if err := Write(&buf, es); err != nil {
		t.Fatal(err)
	}
	back, err := Read(buf.Bytes())
	if err != nil || len(back) != 4 || back[3].After != 3 {
		t.Fatalf("read back: %v %+v\n%s", err, back, buf.String())
	}
	// A trace cut from a longer one: the turn whose parent is gone is imported on its own, counted.
	cut := strings.SplitN(bailianSample, "\n", 2)[1]
	es, info, err = ImportBailian(strings.NewReader(cut))
	if err != nil || info.Orphans != 1 || info.Roots != 2 || len(es) != 3 || es[2].InputLength != 800 || es[2].After != 0 {
		t.Fatalf("cut: %v %+v %+v", err, info, es)
	}
	es, info, err = ImportBailian(strings.NewReader(strings.Replace(bailianSample, `"parent_chat_id": 159`, `"parent_chat_id": 9`, 1)))
	if err != nil || info.Orphans != 1 || es[2].After != 0 {
		t.Fatalf("orphan: %v %+v %+v", err, info, es)
	}
}

// TestImportBailianRefuses: each refusal names the line and the rule.
func TestImportBailianRefuses(t *testing.T) {
	for _, c := range []struct{ name, in, want string }{
		{"unknown key", `{"chat_id": 1, "timestamp": 1, "input_length": 1, "output_length": 1, "user": "x"}`, "line 1"},
		{"no timestamp", `{"chat_id": 1, "input_length": 1, "output_length": 1}`, "bailian line 1: want"},
		{"negative time", `{"chat_id": 1, "timestamp": -1, "input_length": 1, "output_length": 1}`, "timestamp -1"},
		{"duplicate chat", "{\"chat_id\": 1, \"timestamp\": 1, \"input_length\": 1, \"output_length\": 1}\n{\"chat_id\": 1, \"timestamp\": 2, \"input_length\": 1, \"output_length\": 1}", "line 2: chat_id 1 appears twice"},
		{"own parent", `{"chat_id": 4, "parent_chat_id": 4, "timestamp": 1, "input_length": 1, "output_length": 1}`, "parent_chat_id 4"},
		{"parent later", "{\"chat_id\": 2, \"parent_chat_id\": 1, \"timestamp\": 1, \"input_length\": 1, \"output_length\": 1}\n{\"chat_id\": 1, \"timestamp\": 5, \"input_length\": 1, \"output_length\": 1}", "line 1: chat 2 at 1.000 s waits for chat 1 (line 2)"},
		{"zero input", `{"chat_id": 1, "timestamp": 1, "input_length": 0, "output_length": 1}`, "input_length 0"},
		{"turn 0", `{"chat_id": 1, "timestamp": 1, "input_length": 1, "output_length": 1, "turn": 0}`, "turn 0"},
		{"empty", "\n\n", "no entries"},
	} {
		_, _, err := ImportBailian(strings.NewReader(c.in))
		if !errors.Is(err, ErrTrace) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}

// TestReadParent: a parent is the index of an earlier line; a later or own index is refused.
func TestReadParent(t *testing.T) {
	ok := `{"timestamp":0,"input_length":1,"output_length":1}` + "\n" + `{"timestamp":5,"input_length":2,"output_length":1,"parent":0}`
	es, err := Read([]byte(ok))
	if err != nil || es[1].After != 1 {
		t.Fatalf("%v %+v", err, es)
	}
	for _, bad := range []string{
		`{"timestamp":0,"input_length":1,"output_length":1,"parent":0}`,
		`{"timestamp":0,"input_length":1,"output_length":1}` + "\n" + `{"timestamp":5,"input_length":2,"output_length":1,"parent":1}`,
		`{"timestamp":0,"input_length":1,"output_length":1,"parent":-1}`,
	} {
		if _, err := Read([]byte(bad)); !errors.Is(err, ErrTrace) || !strings.Contains(err.Error(), "parent") {
			t.Errorf("%s: %v", bad, err)
		}
	}
}

// FuzzImportBailian: no input panics, and what it accepts is a trace Read accepts once written.
func FuzzImportBailian(f *testing.F) {
	f.Add([]byte(bailianSample))
	f.Add([]byte(`{"chat_id": 1, "parent_chat_id": 1e400, "timestamp": 1e308, "input_length": 1, "output_length": 1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		es, _, err := ImportBailian(bytes.NewReader(data))
		if err != nil {
			return
		}
		var buf bytes.Buffer
		if err := Write(&buf, es); err != nil {
			t.Fatal(err)
		}
		if _, err := Read(buf.Bytes()); err != nil {
			t.Fatalf("imported entries do not read back: %v", err)
		}
	})
}
