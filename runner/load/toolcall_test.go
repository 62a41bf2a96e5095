package load

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/wire"
)

const weatherTools = `[
 {"type": "function", "function": {"name": "get_time", "description": "the time"}},
 {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
  "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}, "units": {"type": "string", "enum": ["c", "f"]}},
  "required": ["city", "units"], "additionalProperties": false}}}
]`

func mustTools(t *testing.T, file string, d contract.Tools) *Tools {
	t.Helper()
	tools, err := ParseTools([]byte(file), d)
	if err != nil {
		t.Fatal(err)
	}
	return tools
}

// TestParseTools: a tools file parses into its functions and the tool_choice sent; every
// malformed file or declaration is refused with ErrTools, naming the tool.
func TestParseTools(t *testing.T) {
	tools := mustTools(t, weatherTools, contract.Tools{Choice: contract.ToolsChoiceFunction, Function: "get_weather"})
	if !tools.fns.Has("get_time") || !tools.fns.Has("get_weather") || tools.fns.Has("get_date") || tools.fns.Invalid("get_time", []byte(`[]`)) == "" || tools.fns.Invalid("get_time", []byte(`{}`)) != "" {
		t.Fatalf("tools %+v", tools)
	}
	if c, _ := json.Marshal(tools.choice); string(c) != `{"type":"function","function":{"name":"get_weather"}}` {
		t.Fatalf("choice %s", c)
	}
	if bytes.ContainsAny(tools.wire, "\n ") && !bytes.Contains(tools.wire, []byte(`"the time"`)) {
		t.Fatalf("wire not compacted: %s", tools.wire)
	}
	fn := func(name, params string) string {
		return fmt.Sprintf(`{"type":"function","function":{"name":%q,"parameters":%s}}`, name, params)
	}
	many := make([]string, MaxTools+1)
	for i := range many {
		many[i] = fn(fmt.Sprintf("f%d", i), "null")
	}
	for _, tt := range []struct {
		name, file string
		d          contract.Tools
		want       string
	}{
		{"not an array", `{}`, contract.Tools{Choice: "auto"}, "array"},
		{"empty", `[]`, contract.Tools{Choice: "auto"}, "1 to 128"},
		{"too many", "[" + strings.Join(many, ",") + "]", contract.Tools{Choice: "auto"}, "1 to 128"},
		{"not a function tool", `[{"type":"web_search"}]`, contract.Tools{Choice: "auto"}, "tool 0"},
		{"unknown member", `[{"type":"function","function":{"name":"f"},"x":1}]`, contract.Tools{Choice: "auto"}, "tool 0"},
		{"bad name", "[" + fn("a b", "null") + "]", contract.Tools{Choice: "auto"}, "function name"},
		{"twice", "[" + fn("f", "null") + "," + fn("f", "null") + "]", contract.Tools{Choice: "auto"}, "declared twice"},
		{"parameters not an object", "[" + fn("f", "[]") + "]", contract.Tools{Choice: "auto"}, "JSON Schema object"},
		{"parameters do not compile", "[" + fn("f", `{"type":"objekt"}`) + "]", contract.Tools{Choice: "auto"}, "compile"},
		{"file reference", "[" + fn("f", `{"$ref":"file:///etc/passwd"}`) + "]", contract.Tools{Choice: "auto"}, "compile"},
		{"remote reference", "[" + fn("f", `{"$ref":"https://example.com/s.json"}`) + "]", contract.Tools{Choice: "auto"}, "compile"},
		{"unknown choice function", weatherTools, contract.Tools{Choice: "function", Function: "nope"}, "does not declare"},
		{"function with auto", weatherTools, contract.Tools{Choice: "auto", Function: "get_time"}, "choice function only"},
		{"unknown choice", weatherTools, contract.Tools{Choice: "any"}, "choice"},
		{"too large", `[` + strings.Repeat(" ", MaxToolsBytes) + `]`, contract.Tools{Choice: "auto"}, "bytes"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseTools([]byte(tt.file), tt.d)
			if !errors.Is(err, ErrTools) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want ErrTools saying %q", err, tt.want)
			}
		})
	}
}

// reassemble feeds chunks to a call set as a chat stream does and judges the calls.
func reassemble(chunks []string, shape chunkShape, tools *Tools) ([]contract.ToolCall, []string, error) {
	var cs callSet
	for i, ch := range chunks {
		if _, _, _, err := parseChunkCalls([]byte(ch), shape, nil, []byte{}, &cs, false); err != nil {
			return nil, nil, fmt.Errorf("chunk %d: %w", i, err)
		}
	}
	calls, why := judgeCalls(&cs, tools)
	return calls, why, nil
}

func digestOf(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "sha256:" + hex.EncodeToString(sum[:])
}

func delta(calls string) string {
	return `{"choices":[{"index":0,"delta":{"tool_calls":[` + calls + `]},"finish_reason":null}]}`
}

// TestToolCallReassembly: streamed tool_calls deltas reassemble into calls (vLLM's shape: the id
// and name first, argument fragments after; two calls interleaved; an element without index at
// its position; a whole message), each judged against the tools; malformed and oversized deltas
// fail the chunk.
func TestToolCallReassembly(t *testing.T) {
	tools := mustTools(t, weatherTools, contract.Tools{Choice: contract.ToolsChoiceAuto})
	type want struct {
		index     int64
		id, name  string
		args      string
		valid     bool
		whyPrefix string
	}
	for _, tt := range []struct {
		name   string
		shape  chunkShape
		chunks []string
		want   []want
	}{
		{"vllm fragments", shapeChatChunk, []string{
			delta(`{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":""}}`),
			delta(`{"index":0,"function":{"arguments":"{\"city\": \"Lis"}}`),
			delta(`{"index":0,"function":{"arguments":"bon\", \"units\": \"c\"}"}}`),
		}, []want{{0, "call_1", "get_weather", `{"city": "Lisbon", "units": "c"}`, true, ""}}},
		{"two calls interleaved", shapeChatChunk, []string{
			delta(`{"index":1,"id":"b","function":{"name":"get_time","arguments":"{"}}`),
			delta(`{"index":0,"id":"a","function":{"name":"get_weather","arguments":"{\"city\":\"x\"}"}}`),
			delta(`{"index":1,"id":"b","function":{"arguments":"}"}}`),
		}, []want{{0, "a", "get_weather", `{"city":"x"}`, false, "arguments of get_weather do not satisfy"}, {1, "b", "get_time", `{}`, true, ""}}},
		{"no index: the position", shapeChatChunk, []string{
			delta(`{"id":"a","function":{"name":"get_time","arguments":"{}"}},{"id":"b","function":{"name":"nope","arguments":"{}"}}`),
		}, []want{{0, "a", "get_time", `{}`, true, ""}, {1, "b", "nope", `{}`, false, "function \"nope\" is not offered"}}},
		{"whole message", shapeChatBody, []string{
			`{"choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"x\",\"units\":\"k\"}"}}]},"finish_reason":"tool_calls"}]}`,
		}, []want{{0, "c", "get_weather", `{"city":"x","units":"k"}`, false, "arguments of get_weather do not satisfy"}}},
		{"not JSON", shapeChatChunk, []string{delta(`{"index":0,"function":{"name":"get_time","arguments":"{\"a\":"}}`)},
			[]want{{0, "", "get_time", `{"a":`, false, "arguments of get_time are not one JSON document"}}},
		{"two documents", shapeChatChunk, []string{delta(`{"index":0,"function":{"name":"get_time","arguments":"{} {}"}}`)},
			[]want{{0, "", "get_time", `{} {}`, false, "arguments of get_time are not one JSON document"}}},
		{"not an object", shapeChatChunk, []string{delta(`{"index":0,"function":{"name":"get_time","arguments":"[1]"}}`)},
			[]want{{0, "", "get_time", `[1]`, false, "arguments of get_time are not a JSON object"}}},
		{"repeated equal id and name", shapeChatChunk, []string{
			delta(`{"index":0,"id":"a","function":{"name":"get_time","arguments":"{"}}`),
			delta(`{"index":0,"id":"a","function":{"name":"get_time","arguments":"}"}}`),
		}, []want{{0, "a", "get_time", `{}`, true, ""}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			calls, why, err := reassemble(tt.chunks, tt.shape, tools)
			if err != nil {
				t.Fatal(err)
			}
			if len(calls) != len(tt.want) {
				t.Fatalf("%d calls %+v, want %d", len(calls), calls, len(tt.want))
			}
			for i, w := range tt.want {
				c := calls[i]
				if c.Index != w.index || c.ID != w.id || c.Name != w.name || c.ArgumentsDigest != digestOf(w.args) || c.ArgumentsBytes != int64(len(w.args)) || c.Valid != w.valid {
					t.Fatalf("call %d = %+v, want %+v (digest %s)", i, c, w, digestOf(w.args))
				}
				if !strings.HasPrefix(why[i], w.whyPrefix) || (w.valid != (why[i] == "")) {
					t.Fatalf("call %d: why %q, want %q", i, why[i], w.whyPrefix)
				}
			}
		})
	}
	if calls, why := judgeCalls(&callSet{calls: []*callAcc{{name: []byte("get_time"), args: []byte("{}")}}}, nil); calls[0].Valid || why[0] != "the case offers no tools" {
		t.Fatalf("without tools: %+v %q", calls, why)
	}

	many := make([]string, MaxToolCalls+1)
	for i := range many {
		many[i] = fmt.Sprintf(`{"index":%d,"function":{"arguments":"{}"}}`, i%MaxToolCalls)
	}
	manyIDs := make([]string, MaxToolCalls+1)
	for i := range manyIDs {
		manyIDs[i] = `{"function":{"arguments":"{}"}}`
	}
	big := strings.Repeat("x", MaxToolArgumentBytes/2+1)
	for _, tt := range []struct {
		name   string
		chunks []string
		want   string
	}{
		{"id changed", []string{delta(`{"index":0,"id":"a"}`), delta(`{"index":0,"id":"b"}`)}, "id"},
		{"name changed", []string{delta(`{"index":0,"function":{"name":"f"}}`), delta(`{"index":0,"function":{"name":"g"}}`)}, "function name"},
		{"index too large", []string{delta(fmt.Sprintf(`{"index":%d}`, MaxToolCalls))}, "index"},
		{"negative index", []string{delta(`{"index":-1}`)}, "index"},
		{"fractional index", []string{delta(`{"index":0.5}`)}, "index"},
		{"index twice", []string{delta(`{"index":0,"index":1}`)}, "repeated"},
		{"arguments not a string", []string{delta(`{"index":0,"function":{"arguments":{}}}`)}, "not a string"},
		{"element not an object", []string{delta(`1`)}, "not an object"},
		{"too many calls", []string{delta(strings.Join(manyIDs, ","))}, "more than 64"},
		{"long id", []string{delta(`{"index":0,"id":"` + strings.Repeat("i", MaxToolCallIDBytes+1) + `"}`)}, "id longer"},
		{"long arguments", []string{delta(`{"index":0,"function":{"arguments":"` + big + `"}}`), delta(`{"index":0,"function":{"arguments":"` + big + `"}}`)}, "arguments longer"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := reassemble(tt.chunks, shapeChatChunk, tools)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one saying %q", err, tt.want)
			}
		})
	}
	// 65 elements over 64 indexes is one call per index, not a 65th call.
	if calls, _, err := reassemble([]string{delta(strings.Join(many, ","))}, shapeChatChunk, tools); err != nil || len(calls) != MaxToolCalls {
		t.Fatalf("%d calls, err %v", len(calls), err)
	}
}

// TestToolCallAssertion: a tool_call assertion passes a valid call to its function and says why
// it fails otherwise.
func TestToolCallAssertion(t *testing.T) {
	as, err := compileAssertions([]contract.OutputAssertion{{Kind: "tool_call", Function: "get_weather"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := compileAssertions([]contract.OutputAssertion{{Kind: "tool_call", Function: "a b"}}); !errors.Is(err, ErrPlan) {
		t.Fatalf("bad function name: %v", err)
	}
	tools := mustTools(t, weatherTools, contract.Tools{Choice: contract.ToolsChoiceAuto})
	for _, tt := range []struct {
		name   string
		chunks []string
		pass   bool
		detail string
	}{
		{"valid", []string{delta(`{"index":0,"function":{"name":"get_weather","arguments":"{\"city\":\"x\",\"units\":\"f\"}"}}`)}, true, ""},
		{"valid second call", []string{delta(`{"index":0,"function":{"name":"get_time","arguments":"{}"}},{"index":1,"function":{"name":"get_weather","arguments":"{\"city\":\"x\",\"units\":\"f\"}"}}`)}, true, ""},
		{"no call", nil, false, "no tool call (want a call to get_weather)"},
		{"another function", []string{delta(`{"index":0,"function":{"name":"get_time","arguments":"{}"}}`)}, false, "no call to get_weather; called get_time"},
		{"invalid arguments", []string{delta(`{"index":0,"function":{"name":"get_weather","arguments":"{\"city\":\"x\"}"}}`)}, false, "arguments of get_weather do not satisfy its parameters"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var cs callSet
			for _, ch := range tt.chunks {
				if _, _, _, err := parseChunkCalls([]byte(ch), shapeChatChunk, nil, nil, &cs, false); err != nil {
					t.Fatal(err)
				}
			}
			r := &Response{}
			r.ToolCalls, r.toolCallWhy = judgeCalls(&cs, tools)
			out := check(as, "p", r, 16)
			if len(out) != 1 || out[0].Kind != contract.AssertionOutcomeKindToolCall || out[0].Passed != tt.pass {
				t.Fatalf("outcomes %+v", out)
			}
			if !tt.pass && (out[0].Detail == nil || !strings.HasPrefix(*out[0].Detail, tt.detail)) {
				t.Fatalf("detail %v, want %q", out[0].Detail, tt.detail)
			}
		})
	}
}

// TestBodyWithTools: a chat body with tools ends with the file's tools and the tool_choice;
// without tools it is Body's, byte for byte.
func TestBodyWithTools(t *testing.T) {
	c := &contract.Case{API: contract.ServingCaseAPIChat, MaxTokens: 8, Stream: true, Sampling: &contract.Sampling{}}
	p := Prompt{ID: "p", Text: "weather?"}
	plain, err := Body(c, "m", p, nil)
	if err != nil {
		t.Fatal(err)
	}
	tools := mustTools(t, weatherTools, contract.Tools{Choice: contract.ToolsChoiceRequired})
	b, err := BodyWithTools(c, "m", p, nil, tools)
	if err != nil {
		t.Fatal(err)
	}
	want := string(plain[:len(plain)-1]) + `,"tools":` + string(tools.wire) + `,"tool_choice":"required"}`
	if string(b) != want {
		t.Fatalf("body\n%s\nwant\n%s", b, want)
	}
	if b2, _ := BodyWithTools(c, "m", p, nil, nil); !bytes.Equal(b2, plain) {
		t.Fatalf("without tools: %s", b2)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil || len(doc["tools"].([]any)) != 2 {
		t.Fatalf("tools in the body: %v %v", doc["tools"], err)
	}
}

// TestPlanChecksTools: a plan's tools must match its case: api chat, no tokenizer, tool_call
// assertions naming an offered function.
func TestPlanChecksTools(t *testing.T) {
	tools := mustTools(t, weatherTools, contract.Tools{Choice: contract.ToolsChoiceAuto})
	decl := &contract.Tools{Path: "tools.json", Digest: digestOf(weatherTools), Choice: contract.ToolsChoiceAuto}
	for _, tt := range []struct {
		name string
		edit func(p *Plan)
		want string
	}{
		{"ok", func(p *Plan) {}, ""},
		{"unresolved", func(p *Plan) { p.Tools = nil }, "has none"},
		{"undeclared", func(p *Plan) { p.Case.Tools = nil }, "declares no tools"},
		{"responses", func(p *Plan) { p.Case.API = contract.ServingCaseAPIResponses }, "api chat only"},
		{"tokenizer", func(p *Plan) { p.Case.Tokenizer = &contract.Tokenizer{} }, "tokenizer"},
		{"sessions", func(p *Plan) { p.Case.Corpus = &contract.Corpus{Source: contract.CorpusSourceConversations} }, "session"},
		{"session prompts", func(p *Plan) { p.Prompts = []Prompt{{ID: "s", Turns: []Turn{{Text: "hi"}}}} }, "session"},
		{"sessions with results", func(p *Plan) {
			p.Case.Corpus = &contract.Corpus{Source: contract.CorpusSourceConversations}
			p.Case.Tools = &contract.Tools{Choice: contract.ToolsChoiceAuto, Results: map[string]string{"get_time": "noon", "get_weather": "sunny"}}
		}, ""},
		{"results without sessions", func(p *Plan) {
			p.Case.Tools = &contract.Tools{Choice: contract.ToolsChoiceAuto, Results: map[string]string{"get_time": "noon", "get_weather": "sunny"}}
		}, "no conversation corpus"},
		{"a function without a result", func(p *Plan) {
			p.Case.Corpus = &contract.Corpus{Source: contract.CorpusSourceConversations}
			p.Case.Tools = &contract.Tools{Choice: contract.ToolsChoiceAuto, Results: map[string]string{"get_weather": "sunny"}}
		}, "no result for function get_time"},
		{"a result for no function", func(p *Plan) {
			p.Case.Corpus = &contract.Corpus{Source: contract.CorpusSourceConversations}
			p.Case.Tools = &contract.Tools{Choice: contract.ToolsChoiceAuto, Results: map[string]string{"get_time": "noon", "get_weather": "sunny", "get_news": "none"}}
		}, `"get_news", which the tools file does not offer`},
		{"assertion of an unknown function", func(p *Plan) {
			p.Case.OutputAssertions = []contract.OutputAssertion{{Kind: "tool_call", Function: "nope"}}
		}, "do not offer"},
		{"assertion without tools", func(p *Plan) {
			p.Case.Tools, p.Tools = nil, nil
			p.Case.OutputAssertions = []contract.OutputAssertion{{Kind: "tool_call", Function: "get_time"}}
		}, "needs the case's tools"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := &Plan{CaseID: "c", Case: contract.Case{API: contract.ServingCaseAPIChat, Tools: decl}, Tools: tools}
			tt.edit(p)
			err := p.checkTools()
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, ErrPlan) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want ErrPlan saying %q", err, tt.want)
			}
		})
	}
}

// FuzzToolCallDeltas feeds a stream of chat chunks (the input's lines) to the tool-call
// reassembly: an accepted stream stays within the bounds, and its calls are those encoding/json
// reads from the same chunks by the documented rules (index or position, id and name set once,
// argument fragments appended).
func FuzzToolCallDeltas(f *testing.F) {
	for _, s := range []string{
		delta(`{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":""}}`) + "\n" + delta(`{"index":0,"function":{"arguments":"{\"city\": \"Lis"}}`),
		delta(`{"index":1,"id":"b","function":{"name":"get_time","arguments":"{"}}`) + "\n" + delta(`{"index":0,"id":"a","function":{"name":"f","arguments":"{}"}}`) + "\n" + delta(`{"index":1,"function":{"arguments":"}"}}`),
		delta(`{"id":"a","function":{"name":"get_time","arguments":"{}"}},{"id":"b","function":{"name":"x","arguments":"[1]"}}`),
		delta(`{"index":0,"id":null,"function":null}`),
		`{"choices":[{"delta":{"content":"a","tool_calls":null}}]}`,
		delta(`{"index":63,"function":{"name":"a\u00e9","arguments":"\u0000"}}`),
	} {
		f.Add([]byte(s))
	}
	tools, err := ParseTools([]byte(weatherTools), contract.Tools{Choice: contract.ToolsChoiceAuto})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var cs callSet
		lines := bytes.Split(in, []byte{'\n'})
		for _, line := range lines {
			if _, _, _, err := parseChunkCalls(line, shapeChatChunk, nil, []byte{}, &cs, false); err != nil {
				return
			}
		}
		type ref struct {
			id, name, args string
		}
		want := map[int]*ref{}
		var order []int
		for _, line := range lines {
			// Maps, not structs: encoding/json matches struct fields case-insensitively.
			var top map[string]json.RawMessage
			if err := json.Unmarshal(line, &top); err != nil {
				t.Fatalf("accepted %q, encoding/json: %v", line, err)
			}
			var choices []map[string]json.RawMessage
			_ = json.Unmarshal(top["choices"], &choices)
			if len(choices) == 0 {
				continue
			}
			var d map[string]json.RawMessage
			_ = json.Unmarshal(choices[0]["delta"], &d)
			var elems []map[string]json.RawMessage
			_ = json.Unmarshal(d["tool_calls"], &elems)
			for pos, el := range elems {
				idx := pos
				if raw, ok := el["index"]; ok {
					if err := json.Unmarshal(raw, &idx); err != nil {
						t.Fatalf("accepted index %s: %v", raw, err)
					}
				}
				r, ok := want[idx]
				if !ok {
					r = &ref{}
					want[idx] = r
					order = append(order, idx)
				}
				var id string
				_ = json.Unmarshal(el["id"], &id)
				if id != "" {
					r.id = id
				}
				var fn map[string]json.RawMessage
				_ = json.Unmarshal(el["function"], &fn)
				var name, args string
				_ = json.Unmarshal(fn["name"], &name)
				_ = json.Unmarshal(fn["arguments"], &args)
				if name != "" {
					r.name = name
				}
				r.args += args
			}
		}
		calls, why := judgeCalls(&cs, tools)
		if len(calls) != len(order) || len(calls) > MaxToolCalls || len(why) != len(calls) {
			t.Fatalf("%d calls, encoding/json %d", len(calls), len(order))
		}
		for i, c := range calls {
			r := want[int(c.Index)]
			if r == nil || c.ID != r.id || c.Name != r.name || c.ArgumentsDigest != digestOf(r.args) || c.ArgumentsBytes > MaxToolArgumentBytes {
				t.Fatalf("call %d = %+v, encoding/json %+v", i, c, r)
			}
			if i > 0 && calls[i-1].Index >= c.Index {
				t.Fatalf("calls not in index order: %+v", calls)
			}
		}
	})
}

// TestStreamToolCalls: through the stream, tool-call deltas are token events of kind tool_call
// (TTFT and t_end count them) whose calls the response reassembles; a call after the finish is
// content after finish, a malformed call a malformed event.
func TestStreamToolCalls(t *testing.T) {
	call1 := delta(`{"index":0,"id":"call_1","type":"function","function":{"name":"get_time","arguments":""}}`)
	call2 := delta(`{"index":0,"function":{"arguments":"{\"zone\": \"UTC\"}"}}`)
	finish := `{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}],"usage":null}`
	st := runStream(sseHeader+chunked(evRole, call1, call2, finish, evUsage, evDone), []int{len(sseHeader) + 10, len(sseHeader) + 400, len(sseHeader) + 700}, true, true, false)
	r := &st.resp
	if r.Err != nil || kinds(r.Events) != "other,tool_call,tool_call,other,usage,done" || len(r.Text) != 0 {
		t.Fatalf("err %v kinds %s text %q", r.Err, kinds(r.Events), r.Text)
	}
	if r.TEndNs == nil || *r.TEndNs != r.Events[2].TNs || r.FinishReason == nil || *r.FinishReason != "tool_calls" {
		t.Fatalf("t_end %v (last tool_call event %d), finish %v", r.TEndNs, r.Events[2].TNs, r.FinishReason)
	}
	calls, _ := judgeCalls(&r.calls, nil)
	if len(calls) != 1 || calls[0].Name != "get_time" || calls[0].ID != "call_1" || calls[0].ArgumentsDigest != digestOf(`{"zone": "UTC"}`) {
		t.Fatalf("calls %+v", calls)
	}
	st = runStream(sseHeader+chunked(call1, finish, call2, evUsage, evDone), nil, true, true, false)
	if st.resp.Err == nil || st.resp.Err.Class != ClassContentAfterFinish {
		t.Fatalf("a call after the finish: %+v", st.resp.Err)
	}
	st = runStream(sseHeader+chunked(call1, delta(`{"index":0,"id":"call_2"}`), evUsage, evDone), nil, true, true, false)
	if st.resp.Err == nil || st.resp.Err.Class != ClassMalformedEvent || !strings.Contains(st.resp.Err.Message, "id") {
		t.Fatalf("a changed id: %+v", st.resp.Err)
	}
	// A completions stream never reassembles calls.
	if (&stream{shape: shapeTextChunk}).callBuf() != nil {
		t.Fatal("completions collect tool calls")
	}
}

// TestJudgeCallsKeepsArguments: a record keeps a call's arguments when they are UTF-8 of at most
// wire.MaxKeptArgumentBytes, and only their digest and size otherwise.
func TestJudgeCallsKeepsArguments(t *testing.T) {
	long := []byte(`{"city":"` + strings.Repeat("x", wire.MaxKeptArgumentBytes) + `"}`)
	cs := callSet{calls: []*callAcc{
		{index: 0, name: []byte("get_time"), args: []byte(`{"zone":"UTC"}`)},
		{index: 1, name: []byte("get_time"), args: long},
		{index: 2, name: []byte("get_time"), args: []byte("{\"zone\":\"\xff\"}")},
		{index: 3, name: []byte("get_time"), args: []byte{}},
	}}
	calls, _ := judgeCalls(&cs, nil)
	if calls[0].Arguments == nil || *calls[0].Arguments != `{"zone":"UTC"}` {
		t.Errorf("short arguments not kept: %+v", calls[0])
	}
	if calls[1].Arguments != nil || calls[1].ArgumentsBytes != int64(len(long)) {
		t.Errorf("long arguments kept: %d bytes", calls[1].ArgumentsBytes)
	}
	if calls[2].Arguments != nil {
		t.Errorf("arguments that are not UTF-8 kept: %q", *calls[2].Arguments)
	}
	if calls[3].Arguments == nil || *calls[3].Arguments != "" {
		t.Errorf("empty arguments not kept: %+v", calls[3])
	}
}
