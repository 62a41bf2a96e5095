package trace

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"
)

// wekaSample: two conversations in the published shape (one object a line). Conversation b's
// third request is stamped before its second (overlapping turns): it is serialised after it.
const wekaSample = `{"id": "8712b46f-04e", "models": ["m"], "block_size": 64, "tool_tokens": 100, "system_tokens": 50, "requests": [{"t": 0.0, "type": "s", "model": "m", "in": 200, "out": 30, "hash_ids": [1, 2, 3], "input_types": ["text"], "output_types": ["text", "tool_use"], "stop": "tool_use"}, {"t": 1.5, "type": "s", "in": 260, "out": 10, "hash_ids": [1, 2, 3, 4], "input_types": ["tool_result"], "stop": "end_turn", "api_time": 0.4, "ttft": 0.1, "think_time": 0.2}], "_analysis": {"indexed": 2, "total": 2, "unique_blocks": 4}}
{"id": "f99f3001-351", "block_size": 64, "requests": [{"t": 0.0, "in": 70, "out": 5, "hash_ids": [1]}, {"t": 0.9, "in": 140, "out": 5, "hash_ids": [1, 2]}, {"t": 0.8, "in": 150, "out": 5, "hash_ids": [1, 2]}]}
`

// TestImportWEKA: conversations start together (or staggered), each request waits for the one
// before it, hash ids are moved apart per conversation (b's past a's largest, 4), and the result
// reads back.
func TestImportWEKA(t *testing.T) {
	es, info, err := ImportWEKA(strings.NewReader(wekaSample), 0)
	if err != nil {
		t.Fatal(err)
	}
	if info.Conversations != 2 || info.BlockSize != 64 || info.Clamped != 1 {
		t.Fatalf("info %+v", info)
	}
	// In time order: a0 (0), b0 (0), b1 (900), b2 (900, clamped), a1 (1500).
	type want struct {
		ms, in int64
		parent int
		ids    []int64
	}
	wants := []want{{0, 200, -1, []int64{1, 2, 3}}, {0, 70, -1, []int64{6}}, {900, 140, 1, []int64{6, 7}}, {900, 150, 2, []int64{6, 7}}, {1500, 260, 0, []int64{1, 2, 3, 4}}}
	for k, w := range wants {
		p := int(es[k].After - 1)
		if es[k].TimestampMs != w.ms || es[k].InputLength != w.in || p != w.parent || !slices.Equal(es[k].HashIDs, w.ids) {
			t.Errorf("entry %d: %+v parent %d, want %+v", k, es[k], p, w)
		}
	}
	var buf bytes.Buffer
	if err := Write(&buf, es); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(buf.Bytes()); err != nil {
		t.Fatalf("read back: %v", err)
	}
	// Staggered by 10 s: conversation b starts at 10,000 ms.
	es, _, err = ImportWEKA(strings.NewReader(wekaSample), 10_000)
	if err != nil || es[1].TimestampMs != 1500 || es[2].TimestampMs != 10_000 || es[4].TimestampMs != 10_900 || es[4].After != 4 {
		t.Fatalf("staggered: %v %+v", err, es)
	}
	// A single conversation object, pretty-printed.
	one := "{\n  \"id\": \"x\",\n  \"block_size\": 64,\n  \"requests\": [\n    {\"t\": 0, \"in\": 1, \"out\": 1},\n    {\"t\": 2, \"in\": 3, \"out\": 1}\n  ]\n}\n"
	es, info, err = ImportWEKA(strings.NewReader(one), 0)
	if err != nil || len(es) != 2 || es[1].After != 1 || info.Conversations != 1 {
		t.Fatalf("single object: %v %+v %+v", err, es, info)
	}
}

// TestImportWEKARefuses: each refusal names the line, the request and what is wrong.
func TestImportWEKARefuses(t *testing.T) {
	for _, c := range []struct{ name, in, want string }{
		{"nested sub-agent", `{"id": "a", "block_size": 64, "requests": [{"t": 0, "in": 1, "out": 1}, {"t": 5, "type": "subagent", "requests": [{"t": 0, "type": "subagent", "requests": []}]}]}`, "line 1 request 1 (a sub-agent) request 0: a sub-agent inside a sub-agent"},
		{"sub-agent without t", `{"id": "a", "block_size": 64, "requests": [{"type": "subagent", "requests": []}]}`, `line 1 request 0: want a sub-agent {"type": "subagent", "t": s`},
		{"sub-agent without requests", `{"id": "a", "block_size": 64, "requests": [{"t": 1, "type": "subagent"}]}`, `line 1 request 0: want a sub-agent`},
		{"sub-agent negative t", `{"id": "a", "block_size": 64, "requests": [{"t": -5, "type": "subagent", "requests": [{"t": 9, "in": 1, "out": 1}]}]}`, `line 1 request 0 (a sub-agent): t -5`},
		{"sub-agent unknown key", `{"id": "a", "block_size": 64, "requests": [{"t": 1, "type": "subagent", "prompt": "x", "requests": []}]}`, `line 1 request 0 (a sub-agent)`},
		{"sub-agent request", `{"id": "a", "block_size": 64, "requests": [{"t": 1, "type": "subagent", "requests": [{"t": 0, "in": 0, "out": 1}]}]}`, `line 1 request 0 (a sub-agent) request 0: input_length 0`},
		{"group too large", `{"id": "a", "block_size": 64, "requests": [` + strings.Repeat(`{"t": 1, "type": "subagent", "requests": [{"t": 0, "in": 1, "out": 1}]}, `, MaxParents) + `{"t": 1, "type": "subagent", "requests": [{"t": 0, "in": 1, "out": 1}]}]}`, "line 1 request 64: a group of more than 64 sub-agents"},
		{"hash_id_scope", `{"id": "a", "block_size": 64, "hash_id_scope": "session", "requests": [{"t": 0, "in": 1, "out": 1}]}`, `line 1: hash_id_scope "session"`},
		{"two hash_id_scopes", "{\"id\": \"a\", \"block_size\": 64, \"requests\": [{\"t\": 0, \"in\": 1, \"out\": 1}]}\n{\"id\": \"b\", \"block_size\": 64, \"hash_id_scope\": \"global\", \"requests\": [{\"t\": 0, \"in\": 1, \"out\": 1}]}", `line 2: hash_id_scope "global", the first conversation's is "local"`},
		{"unknown key", `{"id": "a", "block_size": 64, "requests": [{"t": 0, "in": 1, "out": 1, "prompt": "secret"}]}`, "line 1 request 0"},
		{"no block size", `{"id": "a", "requests": [{"t": 0, "in": 1, "out": 1}]}`, "block_size"},
		{"two block sizes", "{\"id\": \"a\", \"block_size\": 64, \"requests\": [{\"t\": 0, \"in\": 1, \"out\": 1}]}\n{\"id\": \"b\", \"block_size\": 16, \"requests\": [{\"t\": 0, \"in\": 1, \"out\": 1}]}", "line 2: block_size 16, the first conversation's is 64"},
		{"no t", `{"id": "a", "block_size": 64, "requests": [{"in": 1, "out": 1}]}`, `want {"t": s`},
		{"negative t", `{"id": "a", "block_size": 64, "requests": [{"t": -1, "in": 1, "out": 1}]}`, "t -1"},
		{"zero out", `{"id": "a", "block_size": 64, "requests": [{"t": 0, "in": 1, "out": 0}]}`, "output_length 0"},
		{"empty", "\n", "no conversations"},
	} {
		_, _, err := ImportWEKA(strings.NewReader(c.in), 0)
		if !errors.Is(err, ErrTrace) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	if _, _, err := ImportWEKA(strings.NewReader(wekaSample), -1); !errors.Is(err, ErrTrace) {
		t.Errorf("negative stagger: %v", err)
	}
}

// FuzzImportWEKA: no input panics, and what it accepts is a trace Read accepts once written.
func FuzzImportWEKA(f *testing.F) {
	f.Add([]byte(wekaSample), int64(0))
	f.Add([]byte(wekaSubagentSample), int64(0))
	f.Add([]byte(`{"id": "a", "block_size": 64, "requests": [{"t": 1e300, "in": 1, "out": 1, "hash_ids": [9223372036854775807]}]}`), int64(5))
	f.Fuzz(func(t *testing.T, data []byte, stagger int64) {
		es, _, err := ImportWEKA(bytes.NewReader(data), stagger)
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

// wekaSubagentSample: one conversation (global hash ids) whose request 0 spawns a group of two
// sub-agents at 2 s (x: two requests, y: one), whose request 1 joins them, then a group of one
// sub-agent with no request (skipped) and one with a request, then request 2 that waits for it;
// the join's t (3 s) comes before x's second request (2 + 1.5 s): it is imported at 3.5 s.
const wekaSubagentSample = `{"id": "02f3098e-6bc", "models": ["big"], "block_size": 64, "hash_id_scope": "global", "tool_tokens": 10, "system_tokens": 5, "requests": [` +
	`{"t": 0.0, "type": "n", "model": "big", "in": 300, "out": 20, "hash_ids": [1, 2, 3], "stop": "tool_use"}, ` +
	`{"t": 2.0, "type": "subagent", "agent_id": "a44c0618", "subagent_type": null, "duration_ms": 1500, "total_tokens": 500, "tool_use_count": 2, "status": "completed", "models": ["small"], "requests": [` +
	`{"t": 0.0, "type": "n", "model": "small", "in": 100, "out": 10, "hash_ids": [9]}, {"t": 1.5, "type": "n", "in": 130, "out": 10, "hash_ids": [9, 10]}]}, ` +
	`{"t": 2.0, "type": "subagent", "agent_id": "b1", "subagent_type": "Explore", "status": "completed", "requests": [{"t": 0.25, "in": 90, "out": 8, "hash_ids": [11]}]}, ` +
	`{"t": 3.0, "type": "n", "in": 400, "out": 12, "hash_ids": [1, 2, 3, 4, 5]}, ` +
	`{"t": 5.0, "type": "subagent", "agent_id": "c2", "status": "failed", "requests": []}, ` +
	`{"t": 5.0, "type": "subagent", "agent_id": "d3", "requests": [{"t": 0.0, "in": 50, "out": 4}]}, ` +
	`{"t": 6.0, "type": "n", "in": 450, "out": 6, "hash_ids": [1, 2, 3, 4, 5, 6]}], "totals": {"subagent_count": 4}}
`

// TestImportWEKASubagents: a group's sub-agents each wait for the request that spawned them and
// run their own requests in order, beside each other at their own offsets; the next request
// joins the group (waits for each sub-agent's last request); a sub-agent without requests adds
// nothing; global hash ids are kept; the result reads back with the same parents and turns.
func TestImportWEKASubagents(t *testing.T) {
	es, info, err := ImportWEKA(strings.NewReader(wekaSubagentSample), 0)
	if err != nil {
		t.Fatal(err)
	}
	if info.Conversations != 1 || info.Subagents != 4 || info.Joins != 1 || info.Clamped != 1 {
		t.Fatalf("info %+v", info)
	}
	// In time order: r0 (0), x0 (2000), y0 (2250), x1 (3500), r1 (3500, joins x1 and y0),
	// d0 (5000), r2 (6000).
	type want struct {
		ms, in  int64
		parents []int
		ids     []int64
	}
	wants := []want{
		{0, 300, nil, []int64{1, 2, 3}},
		{2000, 100, []int{0}, []int64{9}},
		{2250, 90, []int{0}, []int64{11}},
		{3500, 130, []int{1}, []int64{9, 10}},
		{3500, 400, []int{2, 3}, []int64{1, 2, 3, 4, 5}},
		{5000, 50, []int{4}, nil},
		{6000, 450, []int{5}, []int64{1, 2, 3, 4, 5, 6}},
	}
	if len(es) != len(wants) {
		t.Fatalf("%d entries: %+v", len(es), es)
	}
	for k, w := range wants {
		got := slices.Collect(es[k].Parents())
		if es[k].TimestampMs != w.ms || es[k].InputLength != w.in || !slices.Equal(got, w.parents) || !slices.Equal(es[k].HashIDs, w.ids) {
			t.Errorf("entry %d: %+v parents %v, want %+v", k, es[k], got, w)
		}
	}
	if got := Turns(es); !slices.Equal(got, []int32{1, 2, 2, 3, 4, 5, 6}) {
		t.Errorf("turns %v", got)
	}
	var buf bytes.Buffer
	if err := Write(&buf, es); err != nil {
		t.Fatal(err)
	}
	back, err := Read(buf.Bytes())
	if err != nil || !slices.Equal(back[4].Join, []int64{2, 3}) {
		t.Fatalf("read back: %v %+v", err, back)
	}
	// Local ids (the default): the second conversation's ids move past the first's largest (11),
	// its sub-agent's with them.
	local := strings.Replace(wekaSubagentSample, `"hash_id_scope": "global", `, "", 1)
	two := local + local
	es, info, err = ImportWEKA(strings.NewReader(two), 0)
	if err != nil || info.Conversations != 2 || len(es) != 14 {
		t.Fatalf("two conversations: %v %+v", err, info)
	}
	if es[1].TimestampMs != 0 || !slices.Equal(es[1].HashIDs, []int64{13, 14, 15}) || !slices.Equal(slices.Collect(es[2].Parents()), []int{0}) || !slices.Equal(es[3].HashIDs, []int64{21}) {
		t.Fatalf("second conversation: %+v", es[:4])
	}
}
