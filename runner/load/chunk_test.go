package load

import (
	"bytes"
	"encoding/json"
	"strconv"
	"testing"
)

func TestParseChunk(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		shape   chunkShape
		text    string
		content bool
		reason  string // the reasoning text collected (a reasoning chunk when not empty)
		tool    bool   // a tool-call chunk
		finish  string
		usage   *usageCounts
		isError bool
		errText string
		bad     bool
	}{
		{name: "content", in: `{"id":"x","choices":[{"index":0,"delta":{"content":"12345 "},"finish_reason":null}],"usage":null}`, text: "12345 ", content: true},
		{name: "role prelude is not content", in: `{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}`},
		{name: "null content", in: `{"choices":[{"delta":{"content":null}}]}`},
		{name: "escapes", in: `{"choices":[{"delta":{"content":"a\"b\\c\/d\n\u00e9\ud83d\ude00"}}]}`, text: "a\"b\\c/d\né😀", content: true},
		{name: "reasoning is reasoning, not text", in: `{"choices":[{"delta":{"reasoning_content":"think"}}]}`, reason: "think"},
		{name: "reasoning field", in: `{"choices":[{"delta":{"reasoning":"thi\u006ek"}}]}`, reason: "think"},
		{name: "empty reasoning", in: `{"choices":[{"delta":{"reasoning_content":"","content":null}}]}`},
		{name: "reasoning beside content", in: `{"choices":[{"delta":{"reasoning_content":"r","content":"c"}}]}`, reason: "r", text: "c", content: true},
		{name: "reasoning in a message", in: `{"choices":[{"message":{"role":"assistant","reasoning_content":"why","content":"so"}}]}`, shape: shapeChatBody, reason: "why", text: "so", content: true},
		{name: "reasoning not a string", in: `{"choices":[{"delta":{"reasoning":5}}]}`, bad: true},
		{name: "usage reasoning", in: `{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":7,"total_tokens":12,"completion_tokens_details":{"reasoning_tokens":3}}}`,
			usage: &usageCounts{present: true, prompt: 5, compl: 7, total: 12, hasP: true, hasC: true, hasT: true, reasoning: 3, hasReasoning: true}},
		{name: "usage reasoning not integer", in: `{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":7,"total_tokens":12,"completion_tokens_details":{"reasoning_tokens":null}}}`,
			usage: &usageCounts{present: true, prompt: 5, compl: 7, total: 12, hasP: true, hasC: true, hasT: true}},
		{name: "tool call is a tool-call chunk", in: `{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"name":"f"}}]}}]}`, tool: true},
		{name: "tool call beside content", in: `{"choices":[{"delta":{"content":"a","tool_calls":[{"index":0,"function":{"arguments":"{"}}]}}]}`, text: "a", content: true, tool: true},
		{name: "tool call in a message", in: `{"choices":[{"message":{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]}}]}`, shape: shapeChatBody, tool: true},
		{name: "tool calls not an array", in: `{"choices":[{"delta":{"tool_calls":{}}}]}`, bad: true},
		{name: "empty tool calls", in: `{"choices":[{"delta":{"tool_calls":[]}}]}`},
		{name: "finish", in: `{"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}`, finish: "length"},
		{name: "usage", in: `{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":7,"total_tokens":12,"prompt_tokens_details":{"cached_tokens":0}}}`,
			usage: &usageCounts{present: true, prompt: 5, compl: 7, total: 12, hasP: true, hasC: true, hasT: true, hasCached: true}},
		{name: "usage cached", in: `{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":7,"total_tokens":12,"prompt_tokens_details":{"audio_tokens":0,"cached_tokens":4}}}`,
			usage: &usageCounts{present: true, prompt: 5, compl: 7, total: 12, hasP: true, hasC: true, hasT: true, cached: 4, hasCached: true}},
		{name: "usage cached not integer", in: `{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":7,"total_tokens":12,"prompt_tokens_details":{"cached_tokens":-4}}}`,
			usage: &usageCounts{present: true, prompt: 5, compl: 7, total: 12, hasP: true, hasC: true, hasT: true}},
		{name: "usage details null", in: `{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":7,"total_tokens":12,"prompt_tokens_details":null}}`,
			usage: &usageCounts{present: true, prompt: 5, compl: 7, total: 12, hasP: true, hasC: true, hasT: true}},
		{name: "usage not integer", in: `{"usage":{"prompt_tokens":5.5,"completion_tokens":7,"total_tokens":12}}`,
			usage: &usageCounts{present: true, compl: 7, total: 12, hasC: true, hasT: true, bad: "usage.prompt_tokens = 5.5 is not an integer"}},
		{name: "usage negative", in: `{"usage":{"prompt_tokens":-1,"completion_tokens":7,"total_tokens":6}}`,
			usage: &usageCounts{present: true, compl: 7, total: 6, hasC: true, hasT: true, bad: "usage.prompt_tokens = -1 is negative"}},
		{name: "completions text", in: `{"choices":[{"index":0,"text":"abc","finish_reason":null}]}`, shape: shapeTextChunk, text: "abc", content: true},
		{name: "chat body", in: `{"id":"y","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`,
			shape: shapeChatBody, text: "hi", content: true, finish: "stop", usage: &usageCounts{present: true, prompt: 1, compl: 1, total: 2, hasP: true, hasC: true, hasT: true}},
		{name: "openai error", in: `{"error":{"message":"overloaded","type":"server_error"}}`, isError: true, errText: "overloaded"},
		{name: "vllm error", in: `{"object":"error","message":"bad","type":"BadRequestError","code":400}`, isError: true, errText: "bad"},
		{name: "null error", in: `{"error":null,"choices":[]}`},
		{name: "whitespace", in: " \t\r\n{ \"choices\" : [ { \"delta\" : { \"content\" : \"x\" } } ] } \n", text: "x", content: true},
		{name: "truncated", in: `{"choices":[{"delta":{"content":"ab`, bad: true},
		{name: "trailing data", in: `{"choices":[]}x`, bad: true},
		{name: "not an object", in: `[1]`, bad: true},
		{name: "invalid utf-8", in: "{\"choices\":[{\"delta\":{\"content\":\"\xff\"}}]}", bad: true},
		{name: "lone surrogate", in: `{"choices":[{"delta":{"content":"\ud800"}}]}`, bad: true},
		{name: "control char", in: "{\"choices\":[{\"delta\":{\"content\":\"a\x01\"}}]}", bad: true},
		{name: "duplicate content", in: `{"choices":[{"delta":{"content":"a","content":"b"}}]}`, bad: true},
		{name: "two choices", in: `{"choices":[{"delta":{}},{"delta":{}}]}`, bad: true},
		{name: "choice index 1", in: `{"choices":[{"index":1,"delta":{}}]}`, bad: true},
		{name: "content number", in: `{"choices":[{"delta":{"content":5}}]}`, bad: true},
		{name: "bad number", in: `{"x":01}`, bad: true},
		{name: "bad literal", in: `{"x":nul}`, bad: true},
		{name: "deep", in: `{"x":` + string(bytes.Repeat([]byte("["), 100)) + string(bytes.Repeat([]byte("]"), 100)) + `}`, bad: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, text, reason, err := parseChunkReasoning([]byte(tt.in), tt.shape, nil, []byte{}, true)
			if (err != nil) != tt.bad {
				t.Fatalf("err = %v, want bad %v", err, tt.bad)
			}
			if tt.bad {
				return
			}
			if string(text) != tt.text || c.content != tt.content || c.finish != tt.finish || c.isError != tt.isError || c.errorText != tt.errText {
				t.Fatalf("got text %q content %v finish %q error %v %q", text, c.content, c.finish, c.isError, c.errorText)
			}
			if c.toolCall != tt.tool {
				t.Fatalf("tool call %v, want %v", c.toolCall, tt.tool)
			}
			if string(reason) != tt.reason || c.reasoning != (tt.reason != "") {
				t.Fatalf("reasoning %q (%v), want %q", reason, c.reasoning, tt.reason)
			}
			if c2, text2, err := parseChunk([]byte(tt.in), tt.shape, nil, true); err != nil || string(text2) != tt.text || c2.reasoning != c.reasoning {
				t.Fatalf("without a reasoning buffer: text %q reasoning %v err %v", text2, c2.reasoning, err)
			}
			want := usageCounts{}
			if tt.usage != nil {
				want = *tt.usage
			}
			if c.usage != want {
				t.Fatalf("usage %+v, want %+v", c.usage, want)
			}
		})
	}
}

// FuzzChunk checks the scanner against encoding/json: whatever the scanner accepts is valid
// JSON, and the text, content flag, finish reason and usage it reads are what encoding/json
// reads.
func FuzzChunk(f *testing.F) {
	for _, s := range []string{
		`{"id":"x","choices":[{"index":0,"delta":{"content":"12345 "},"finish_reason":null}],"usage":null}`,
		`{"choices":[{"delta":{"reasoning_content":"r","tool_calls":[{}]}}]}`,
		`{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":7,"total_tokens":12}}`,
		`{"choices":[{"delta":{"content":"\u00e9\ud83d\ude00\n"}}]}`,
		`{"error":{"message":"m"}}`,
		`{"a":[1,-2.5e3,true,false,null,{"b":"c"}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		c, text, reason, err := parseChunkReasoning(in, shapeChatChunk, nil, []byte{}, true)
		if err != nil {
			return
		}
		if !json.Valid(in) {
			t.Fatalf("accepted invalid JSON %q", in)
		}
		dec := json.NewDecoder(bytes.NewReader(in))
		dec.UseNumber()
		var top map[string]any
		if err := dec.Decode(&top); err != nil {
			t.Fatalf("accepted %q, encoding/json: %v", in, err)
		}
		wantText, wantContent, wantFinish, wantReason, wantTool := "", false, "", "", false
		if ch, ok := top["choices"].([]any); ok && len(ch) == 1 {
			choice, _ := ch[0].(map[string]any)
			if d, ok := choice["delta"].(map[string]any); ok {
				if s, ok := d["content"].(string); ok {
					wantText = s
				}
				if s, ok := d["content"].(string); ok && s != "" {
					wantContent = true
				}
				for _, k := range []string{"reasoning_content", "reasoning"} {
					if s, ok := d[k].(string); ok {
						wantReason += s // in key order; the seeds never hold both
					}
				}
				if tc, ok := d["tool_calls"].([]any); ok && len(tc) > 0 {
					wantTool = true
				}
			}
			if f, ok := choice["finish_reason"].(string); ok {
				wantFinish = f
			}
		}
		if string(text) != wantText || c.content != wantContent || c.finish != wantFinish || c.toolCall != wantTool {
			t.Fatalf("%q: got text %q content %v finish %q tool call %v; encoding/json: %q %v %q %v", in, text, c.content, c.finish, c.toolCall, wantText, wantContent, wantFinish, wantTool)
		}
		if d, _ := top["choices"].([]any); len(d) == 1 && (len(reason) != len(wantReason) || c.reasoning != (len(reason) > 0)) {
			t.Fatalf("%q: reasoning %q (%v); encoding/json: %q", in, reason, c.reasoning, wantReason)
		}
		u, isObj := top["usage"].(map[string]any)
		if c.usage.present != isObj {
			t.Fatalf("%q: usage present %v, encoding/json %v", in, c.usage.present, isObj)
		}
		if isObj && c.usage.bad == "" && c.usage.hasP {
			n, ok := u["prompt_tokens"].(json.Number)
			if v, err := strconv.ParseInt(string(n), 10, 64); !ok || err != nil || v != c.usage.prompt {
				t.Fatalf("%q: prompt_tokens %d, encoding/json %v", in, c.usage.prompt, u["prompt_tokens"])
			}
		}
	})
}

func BenchmarkParseChunk(b *testing.B) {
	ev := []byte(`{"id":"chatcmpl-qs-1","object":"chat.completion.chunk","created":1,"model":"qualsim-tiny","system_fingerprint":"qualsim","choices":[{"index":0,"delta":{"content":"12345 "},"logprobs":null,"finish_reason":null}],"usage":null}`)
	text := make([]byte, 0, 1<<20)
	b.SetBytes(int64(len(ev)))
	b.ReportAllocs()
	for b.Loop() {
		var err error
		_, text, err = parseChunk(ev, shapeChatChunk, text[:0], false)
		if err != nil {
			b.Fatal(err)
		}
	}
}
