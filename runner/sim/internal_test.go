package sim

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestScheduleJitterIsSeeded(t *testing.T) {
	tm := Timing{TTFT: 10 * time.Millisecond, PrefillPerToken: time.Millisecond, TokenInterval: 5 * time.Millisecond, Jitter: 2 * time.Millisecond}
	offsets := func(hash uint64) []time.Duration {
		sc := newSchedule(tm, 1, hash, 4)
		var out []time.Duration
		for range 50 {
			out = append(out, sc.token())
		}
		return out
	}
	a, b, c := offsets(7), offsets(7), offsets(8)
	same := true
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("offset %d differs for the same seed: %v vs %v", i, a[i], b[i])
		}
		same = same && a[i] == c[i]
		lo := 14 * time.Millisecond
		if i > 0 {
			lo = a[i-1] + tm.TokenInterval
		}
		hi := lo + tm.Jitter
		if a[i] < lo || a[i] >= hi {
			t.Fatalf("offset %d = %v outside [%v, %v)", i, a[i], lo, hi)
		}
	}
	if same {
		t.Fatal("another seed gave the same jitter")
	}
	sc := newSchedule(Timing{TTFT: time.Millisecond, TokenInterval: 2 * time.Millisecond}, 0, 0, 0)
	if o := []time.Duration{sc.token(), sc.token(), sc.token()}; o[0] != time.Millisecond || o[2] != 5*time.Millisecond {
		t.Fatalf("offsets without jitter %v", o)
	}
}

func TestAppendJSONString(t *testing.T) {
	for _, s := range []string{"", "00042 ", `a"b\c`, "line\nfeed\ttab\r\x00\x1f", "é€𝄞", "\u2028\u2029", "bad\xffutf8", "<&>"} {
		got := appendJSONString(nil, s)
		var back string
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatalf("%q -> %s: %v", s, got, err)
		}
		want, _ := json.Marshal(s)
		if strings.ToValidUTF8(s, "\ufffd") != back {
			t.Fatalf("%q round-trips to %q", s, back)
		}
		if !bytes.Contains(want, []byte(`\u003c`)) && !bytes.Equal(got, want) {
			t.Fatalf("%q: got %s, encoding/json %s", s, got, want)
		}
	}
}

// FuzzDecodeRequest: any body either decodes to a request within the limits or is refused with a
// 4xx API error; nothing panics.
func FuzzDecodeRequest(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","prompt":"hello","max_tokens":3,"stream":true,"stream_options":{"include_usage":true}}`,
		`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"a"}]}],"stop":["x"],"seed":-5}`,
		`{"model":"m","prompt":["a"],"n":1,"ignore_eos":true,"max_completion_tokens":9}`,
		`{"model":"m","messages":[{"role":"user","content":null}]}`, `{`, `[]`, `null`, `{"model":1}`,
		`{"model":"m","messages":[{"role":"user","content":"a"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"x":{"type":"integer"}},"required":["x"]}}}],"tool_choice":{"type":"function","function":{"name":"f"}}}`,
		`{"model":"m","messages":[{"role":"user","content":"a"}],"tools":[],"tool_choice":"auto"}`,
		`{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,aGk="}}]}]}`,
		`{"model":"m","messages":[{"role":"user","content":"a"},{"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"r"}],"tools":[{"type":"function","function":{"name":"f"}}]}`,
		`{"model":"m","messages":[{"role":"user","content":"a"},{"role":"tool","tool_call_id":"c1","content":"r"}]}`,
	} {
		f.Add([]byte(s), true)
		f.Add([]byte(s), false)
	}
	f.Fuzz(func(t *testing.T, body []byte, chat bool) {
		q, err := decodeRequest(bytes.NewReader(body), chat, 16)
		if err != nil {
			var ae *apiError
			if !errors.As(err, &ae) || ae.status < 400 || ae.status > 499 || !json.Valid(ae.body()) {
				t.Fatalf("error %v is not a 4xx API error", err)
			}
			return
		}
		if q.model == "" || q.maxTokens < 1 || q.maxTokens > MaxCompletionTokens || len(q.stop) > MaxStopStrings || q.chat != chat {
			t.Fatalf("accepted request out of bounds: %+v", q)
		}
		if chat && (len(q.prompt.Messages) == 0 || len(q.prompt.Messages) > MaxMessages) {
			t.Fatalf("chat request with %d messages", len(q.prompt.Messages))
		}
		if q.toolRounds < 0 || q.toolRounds > len(q.prompt.Messages) {
			t.Fatalf("%d tool rounds in %d messages", q.toolRounds, len(q.prompt.Messages))
		}
		if len(q.tools) > MaxTools || (q.toolChoice != "" && q.toolChoice != "none" && !slices.ContainsFunc(q.tools, func(x tool) bool { return x.name == q.toolChoice })) {
			t.Fatalf("accepted %d tools with choice %q", len(q.tools), q.toolChoice)
		}
		for _, x := range q.tools {
			_ = toolArguments(x.params, 7, false) // renders for any accepted parameters
		}
	})
}

// TestPrefixCacheHitBelowUsage: with a tokenizer the usage count of a prompt can be below the word
// tokens its blocks are hashed from; the hit still leaves at least one of the usage's prompt
// tokens to compute (it never reaches prompt_tokens, so prefill is never zero or negative).
func TestPrefixCacheHitBelowUsage(t *testing.T) {
	c := newPrefixCache(PrefixCache{Enabled: true, BlockTokens: 4, CapacityBlocks: 64})
	p := Prompt{Text: strings.Repeat("word ", 40)} // 41 word tokens with BOS
	if got := c.lookupInsert(1, p, len(p.PromptTokenTexts())); got != 0 {
		t.Fatalf("first lookup hit %d", got)
	}
	if got, want := c.lookupInsert(1, p, len(p.PromptTokenTexts())), 40; got != want {
		t.Errorf("by word tokens: hit %d, want %d", got, want)
	}
	for _, usage := range []int{1, 4, 5, 9, 20} {
		got := c.lookupInsert(1, p, usage)
		if want := (usage - 1) / 4 * 4; got != want || got >= usage {
			t.Errorf("usage %d tokens: hit %d, want %d (below the usage)", usage, got, want)
		}
	}
}

// FuzzDecodeResponsesRequest: any Responses API body either decodes to a chat-prompt request
// within the limits or is refused with a 4xx API error; nothing panics.
func FuzzDecodeResponsesRequest(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","input":"hello","max_output_tokens":3,"stream":true}`,
		`{"model":"m","instructions":"be brief","input":[{"role":"user","content":[{"type":"input_text","text":"a"}]}]}`,
		`{"model":"m","input":[{"type":"message","role":"assistant","content":"b"}],"seed":-1}`,
		`{"model":"m","input":[]}`, `{"model":"m"}`,
		`{"model":"m","input":[{"role":"user","content":[{"type":"input_image","image_url":"data:image/png;base64,aGk="}]}]}`, `{`, `null`, `{"model":"m","input":"x","tools":[]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		q, err := decodeResponsesRequest(bytes.NewReader(body), 16)
		if err != nil {
			var ae *apiError
			if !errors.As(err, &ae) || ae.status < 400 || ae.status > 499 || !json.Valid(ae.body()) {
				t.Fatalf("error %v is not a 4xx API error", err)
			}
			return
		}
		if q.model == "" || !q.chat || !q.responses || q.maxTokens < 1 || q.maxTokens > MaxCompletionTokens || len(q.prompt.Messages) == 0 || len(q.prompt.Messages) > MaxMessages || len(q.tools) > 0 {
			t.Fatalf("accepted request out of bounds: %+v", q)
		}
	})
}
