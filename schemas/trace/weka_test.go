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
		p, ok := es[k].Parent()
		if !ok {
			p = -1
		}
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
		{"sub-agent", `{"id": "a", "block_size": 64, "requests": [{"t": 0, "in": 1, "out": 1}, {"t": 5, "type": "subagent", "agent_id": "9662", "requests": []}]}`, "line 1 request 1: a sub-agent group"},
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
