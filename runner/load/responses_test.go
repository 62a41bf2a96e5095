package load

import (
	"bytes"
	"encoding/json"
	"testing"
)

func TestParseResponsesEvent(t *testing.T) {
	for _, tt := range []struct {
		name, typ, in   string
		text, reason    string
		content, reas   bool
		tool            bool
		terminal, isErr bool
		finish          string
		usage           *usageCounts
		bad             bool
	}{
		{name: "text delta", typ: "response.output_text.delta", in: `{"type":"response.output_text.delta","sequence_number":4,"item_id":"m","output_index":0,"content_index":0,"delta":"00042 "}`, text: "00042 ", content: true},
		{name: "delta before type", in: `{"delta":"a\u00e9","type":"response.output_text.delta"}`, text: "aé", content: true},
		{name: "empty delta", typ: "response.output_text.delta", in: `{"type":"response.output_text.delta","delta":""}`},
		{name: "reasoning delta", typ: "response.reasoning_text.delta", in: `{"type":"response.reasoning_text.delta","delta":"think"}`, reason: "think", reas: true},
		{name: "call arguments", typ: "response.function_call_arguments.delta", in: `{"type":"response.function_call_arguments.delta","delta":"{\"a\""}`, tool: true},
		{name: "created", typ: "response.created", in: `{"type":"response.created","sequence_number":0,"response":{"id":"r","status":"in_progress","output":[],"usage":null}}`},
		{name: "text done is not content", typ: "response.output_text.done", in: `{"type":"response.output_text.done","text":"00042 "}`},
		{name: "completed", typ: "response.completed", in: `{"type":"response.completed","response":{"status":"completed","output":[{"type":"message","content":[{"type":"output_text","text":"not again"}]}],"usage":{"input_tokens":11,"input_tokens_details":{"cached_tokens":4},"output_tokens":5,"output_tokens_details":{"reasoning_tokens":3},"total_tokens":16}}}`,
			terminal: true, finish: "stop", usage: &usageCounts{present: true, prompt: 11, compl: 5, total: 16, hasP: true, hasC: true, hasT: true, cached: 4, hasCached: true, reasoning: 3, hasReasoning: true}},
		{name: "incomplete", typ: "response.incomplete", in: `{"type":"response.incomplete","response":{"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"usage":{"input_tokens":1,"output_tokens":2,"total_tokens":3}}}`,
			terminal: true, finish: "length", usage: &usageCounts{present: true, prompt: 1, compl: 2, total: 3, hasP: true, hasC: true, hasT: true}},
		{name: "failed", typ: "response.failed", in: `{"type":"response.failed","response":{"status":"failed","error":{"code":"server_error","message":"boom"}}}`, terminal: true, isErr: true},
		{name: "error event", typ: "error", in: `{"type":"error","code":"x","message":"bad input"}`, terminal: true, isErr: true},
		{name: "unnamed SSE event", in: `{"type":"response.in_progress","response":{"status":"in_progress"}}`},
		{name: "name and type disagree", typ: "response.output_text.delta", in: `{"type":"response.completed"}`, bad: true},
		{name: "no type", in: `{"delta":"x"}`, bad: true},
		{name: "type twice", in: `{"type":"a","type":"b"}`, bad: true},
		{name: "trailing data", in: `{"type":"a"} x`, bad: true},
		{name: "not an object", in: `"x"`, bad: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, text, reason, terminal, err := parseResponsesEvent([]byte(tt.typ), []byte(tt.in), []byte("pre:"), []byte{})
			if (err != nil) != tt.bad {
				t.Fatalf("err %v, want bad %v", err, tt.bad)
			}
			if tt.bad {
				if string(text) != "pre:" {
					t.Fatalf("a refused event left text %q", text)
				}
				return
			}
			if string(text) != "pre:"+tt.text || string(reason) != tt.reason || c.content != tt.content || c.reasoning != tt.reas || c.toolCall != tt.tool || terminal != tt.terminal || c.isError != tt.isErr || c.finish != tt.finish {
				t.Fatalf("text %q reasoning %q content %v reasoning %v terminal %v error %v finish %q", text, reason, c.content, c.reasoning, terminal, c.isError, c.finish)
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

func TestParseResponsesBody(t *testing.T) {
	in := `{"id":"resp_1","object":"response","status":"completed","output":[{"id":"rs","type":"reasoning","summary":[],"content":[{"type":"reasoning_text","text":"hmm "}]},{"type":"function_call","name":"f","arguments":"{}"},{"content":[{"type":"output_text","text":"the ","annotations":[]},{"type":"output_text","text":"answer"}],"type":"message","role":"assistant"}],"usage":{"input_tokens":3,"output_tokens":4,"total_tokens":7}}`
	c, text, reason, err := parseResponsesBody([]byte(in), nil, []byte{})
	if err != nil || string(text) != "the answer" || string(reason) != "hmm " || !c.content || !c.reasoning || c.finish != "stop" || c.id != "resp_1" || c.usage.compl != 4 {
		t.Fatalf("text %q reasoning %q chunk %+v err %v", text, reason, c, err)
	}
	for _, bad := range []string{`{"output":[{"type":5}]}`, `{"output":{}}`, `{"status":"completed"}x`, `[]`} {
		if _, _, _, err := parseResponsesBody([]byte(bad), nil, []byte{}); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

// FuzzResponsesEvent checks the Responses API event reader against encoding/json: whatever it
// accepts is valid JSON with a string type, and the text and reasoning it reads are the delta
// encoding/json reads for the event's type.
func FuzzResponsesEvent(f *testing.F) {
	for _, s := range []string{
		`{"type":"response.output_text.delta","delta":"12345 "}`,
		`{"type":"response.reasoning_text.delta","delta":"\u00e9\ud83d\ude00"}`,
		`{"type":"response.completed","response":{"status":"completed","usage":{"input_tokens":1,"output_tokens":2,"total_tokens":3}}}`,
		`{"type":"response.incomplete","response":{"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"}}}`,
		`{"type":"error","message":"m"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		_, text, reason, _, err := parseResponsesEvent(nil, in, nil, []byte{})
		if err != nil {
			return
		}
		var top map[string]any
		dec := json.NewDecoder(bytes.NewReader(in))
		if !json.Valid(in) || dec.Decode(&top) != nil {
			t.Fatalf("accepted invalid JSON %q", in)
		}
		typ, ok := top["type"].(string)
		if !ok {
			t.Fatalf("accepted %q without a string type", in)
		}
		delta, _ := top["delta"].(string)
		wantText, wantReason := "", ""
		switch typ {
		case respTextDelta:
			wantText = delta
		case respReasoningDelta:
			wantReason = delta
		}
		if string(text) != wantText || string(reason) != wantReason {
			t.Fatalf("%q: text %q reasoning %q; encoding/json: %q %q", in, text, reason, wantText, wantReason)
		}
	})
}

// TestImageBodies: images are the same bytes for the same prompt and differ between prompts and
// positions; a message without images encodes exactly as a plain {"role","content"} object (so
// bodies without images keep their digests), HTML characters unescaped; a decoded message with
// image parts keeps its text and counts its images.
func TestImageBodies(t *testing.T) {
	a, err := imagePNG("p-one", 0, 16, 8)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := imagePNG("p-one", 0, 16, 8)
	other, _ := imagePNG("p-one", 1, 16, 8)
	if !bytes.Equal(a, again) || bytes.Equal(a, other) || !bytes.HasPrefix(a, []byte("\x89PNG\r\n\x1a\n")) {
		t.Fatalf("images not deterministic per prompt and position")
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // as Body encodes
	err = enc.Encode([]wireMessage{{Role: "user", Content: "a <b> & c"}})
	if plain := buf.String(); err != nil || plain != `[{"role":"user","content":"a <b> & c"}]`+"\n" {
		t.Fatalf("plain message %s, %v", plain, err)
	}
	text := "look"
	withImages, _ := json.Marshal(wireMessage{Role: "user", Parts: []wirePart{{Type: "text", Text: &text}, {Type: "image_url", ImageURL: &wireImageURL{URL: "data:image/png;base64,AA=="}}}})
	var m wireMessage
	if err := json.Unmarshal(withImages, &m); err != nil || m.Content != "look" || m.Images != 1 {
		t.Fatalf("decoded %s as %+v, %v", withImages, m, err)
	}
}
