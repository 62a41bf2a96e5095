package load

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/qualkit/qualkit/schemas/contract"
)

const (
	evRole    = `{"id":"chatcmpl-1","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}],"usage":null}`
	evA       = `{"id":"chatcmpl-1","choices":[{"index":0,"delta":{"content":"11111 "},"finish_reason":null}],"usage":null}`
	evBC      = `{"id":"chatcmpl-1","choices":[{"index":0,"delta":{"content":"22222 33333 "},"finish_reason":null}],"usage":null}`
	evFinish  = `{"id":"chatcmpl-1","choices":[{"index":0,"delta":{},"finish_reason":"length"}],"usage":null}`
	evUsage   = `{"id":"chatcmpl-1","choices":[],"usage":{"prompt_tokens":4,"completion_tokens":3,"total_tokens":7}}`
	evUsageX  = `{"id":"chatcmpl-1","choices":[],"usage":{"prompt_tokens":4,"completion_tokens":3,"total_tokens":8}}`
	evDone    = `[DONE]`
	sseHeader = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n\r\n"
)

// chunked frames SSE events as a chunked body, one chunk per event, with the terminal chunk.
func chunked(events ...string) string {
	var b strings.Builder
	for _, e := range events {
		payload := "data: " + e + "\n\n"
		fmt.Fprintf(&b, "%x\r\n%s\r\n", len(payload), payload)
	}
	b.WriteString("0\r\n\r\n")
	return b.String()
}

// lenBody renders a Content-Length response.
func lenBody(head, body string) string {
	return fmt.Sprintf("%sContent-Length: %d\r\n\r\n%s", head, len(body), body)
}

// rawChunk frames one chunk.
func rawChunk(body string) string { return fmt.Sprintf("%x\r\n%s\r\n", len(body), body) }

func okStream() string { return sseHeader + chunked(evRole, evA, evBC, evFinish, evUsage, evDone) }

// runStream feeds raw through a stream cut at the given offsets, each piece read 1 ms after the
// previous one; eof appends a clean end of connection.
func runStream(raw string, cuts []int, sse, chat, eof bool) *stream {
	epoch := time.Now()
	st := newStream(epoch, chat, false, sse, 256, 16, "s3cr3t")
	st.resp.TSendNs = i64(0)
	prev, k := 0, 0
	for _, c := range append(cuts, len(raw)) {
		if c <= prev || c > len(raw) {
			continue
		}
		k++
		st.feed([]byte(raw[prev:c]), epoch.Add(time.Duration(k)*time.Millisecond))
		prev = c
	}
	if eof {
		k++
		st.eof(epoch.Add(time.Duration(k)*time.Millisecond), nil)
	}
	return st
}

func kinds(evs []contract.Event) string {
	var s []string
	for _, e := range evs {
		s = append(s, string(e.Kind))
	}
	return strings.Join(s, ",")
}

func TestStreamResponses(t *testing.T) {
	long := `{"choices":[{"delta":{"content":"` + strings.Repeat("x", 300) + `"}}]}`
	tests := []struct {
		name     string
		raw      string
		sse      bool
		chat     bool
		eof      bool
		class    contract.ErrorClass // "" = success
		kinds    string
		text     string
		reusable bool
		msg      string // substring of the error message
	}{
		{name: "ok", raw: okStream(), sse: true, chat: true, kinds: "other,content,content,other,usage,done", text: "11111 22222 33333 ", reusable: true},
		{name: "missing usage", raw: sseHeader + chunked(evA, evFinish, evDone), sse: true, chat: true, class: ClassMissingUsage, text: "11111 ", reusable: true},
		{name: "duplicate usage", raw: sseHeader + chunked(evA, evUsage, evUsage, evDone), sse: true, chat: true, class: ClassDuplicateUsage, msg: "2 usage records", reusable: true},
		// ollama 0.17's streamed /v1/completions with include_usage: an all-zero usage object on
		// every chunk that has a choice, the counts on a final chunk without choices.
		{name: "ollama completions placeholder usage", raw: sseHeader + chunked(
			`{"id":"cmpl-959","object":"text_completion","choices":[{"text":" ston","index":0,"finish_reason":null}],"usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0}}`,
			`{"id":"cmpl-959","object":"text_completion","choices":[{"text":"conci","index":0,"finish_reason":null}],"usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0}}`,
			`{"id":"cmpl-959","object":"text_completion","choices":[{"text":"","index":0,"finish_reason":"length"}],"usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0}}`,
			`{"id":"cmpl-959","object":"text_completion","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}`,
			evDone), sse: true, kinds: "content,content,other,usage,done", text: " stonconci", reusable: true},
		{name: "placeholder usage only", raw: sseHeader + chunked(`{"choices":[{"text":"a","index":0}],"usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0}}`, evDone), sse: true, class: ClassMissingUsage, text: "a", reusable: true},
		{name: "all-zero usage without a choice counts", raw: sseHeader + chunked(evA, `{"choices":[],"usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0}}`, evUsage, evDone), sse: true, chat: true, class: ClassDuplicateUsage, msg: "2 usage records", reusable: true},
		{name: "non-zero usage with a choice counts", raw: sseHeader + chunked(`{"choices":[{"delta":{"content":"x"}}],"usage":{"prompt_tokens":4,"completion_tokens":1,"total_tokens":5}}`, evUsage, evDone), sse: true, chat: true, class: ClassDuplicateUsage, msg: "2 usage records", reusable: true},
		{name: "inconsistent usage", raw: sseHeader + chunked(evA, evUsageX, evDone), sse: true, chat: true, class: ClassInconsistentUsage, msg: "total_tokens 8 != prompt_tokens 4 + completion_tokens 3", reusable: true},
		{name: "usage lacks total", raw: sseHeader + chunked(evA, `{"usage":{"prompt_tokens":1,"completion_tokens":1}}`, evDone), sse: true, chat: true, class: ClassInconsistentUsage, msg: "lacks total_tokens", reusable: true},
		{name: "no done", raw: sseHeader + chunked(evA, evUsage), sse: true, chat: true, class: ClassTruncatedStream, msg: "without data: [DONE]", reusable: true},
		{name: "cut mid chunk", raw: strings.TrimSuffix(okStream(), "0\r\n\r\n")[:len(sseHeader)+60], sse: true, chat: true, eof: true, class: ClassTruncatedStream},
		{name: "cut before headers", raw: "HTTP/1.1 200 OK\r\nContent-Ty", sse: true, chat: true, eof: true, class: ClassConnection, msg: "before the response headers"},
		{name: "malformed json", raw: sseHeader + chunked(evA, `{"choices":[{"delta":{"content":"2`, evUsage, evDone), sse: true, chat: true, class: ClassMalformedEvent, msg: "event 2"},
		{name: "event after done", raw: sseHeader + chunked(evA, evUsage, evDone, evA), sse: true, chat: true, class: ClassMalformedEvent, msg: "after data: [DONE]"},
		{name: "missing data prefix", raw: sseHeader + strings.Replace(chunked(evA, evUsage, evDone), "data: "+evA, evA+"      ", 1), sse: true, chat: true, class: ClassMalformedEvent, msg: "unknown field"},
		{name: "oversize line", raw: sseHeader + chunked(evA, long, evUsage, evDone), sse: true, chat: true, class: ClassOversizeLine, msg: "limit 256"},
		{name: "in-stream error", raw: sseHeader + chunked(evA, `{"error":{"message":"engine died"}}`), sse: true, chat: true, class: ClassMalformedEvent, msg: "engine died"},
		{name: "error event type", raw: sseHeader + "17\r\nevent: error\ndata: x\n\n\r\n0\r\n\r\n", sse: true, chat: true, class: ClassMalformedEvent, msg: `type "error"`},
		{name: "unknown finish reason", raw: sseHeader + chunked(evA, `{"choices":[{"delta":{},"finish_reason":"abort"}]}`, evUsage, evDone), sse: true, chat: true, class: ClassMalformedEvent, msg: `"abort"`, reusable: true},
		{name: "http 429", raw: lenBody("HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json\r\nRetry-After: 1\r\n", `{"error":{"message":"rate limited","type":"x"}}`), sse: true, chat: true, class: ClassHTTPStatus, msg: "HTTP 429: rate limited", reusable: true},
		{name: "http 500 chunked", raw: "HTTP/1.1 500 Internal Server Error\r\nTransfer-Encoding: chunked\r\n\r\n4\r\noops\r\n0\r\n\r\n", sse: true, chat: true, class: ClassHTTPStatus, msg: "HTTP 500: oops", reusable: true},
		{name: "interim 100", raw: "HTTP/1.1 100 Continue\r\n\r\n" + okStream(), sse: true, chat: true, kinds: "other,content,content,other,usage,done", text: "11111 22222 33333 ", reusable: true},
		{name: "json instead of stream", raw: "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}", sse: true, chat: true, class: ClassMalformedEvent, msg: "want text/event-stream"},
		{name: "close delimited", raw: "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\ndata: " + evA + "\n\ndata: " + evUsage + "\n\ndata: [DONE]\n\n", sse: true, chat: true, eof: true, kinds: "content,usage,done", text: "11111 "},
		{name: "content length", raw: "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\nContent-Length: " + fmt.Sprint(len("data: [DONE]\n\n")*1+len("data: "+evUsage+"\n\n")) + "\r\n\r\ndata: " + evUsage + "\n\ndata: [DONE]\n\n", sse: true, chat: true, kinds: "usage,done", reusable: true},
		{name: "connection close", raw: strings.Replace(okStream(), "Cache-Control", "Connection: close\r\nCache-Control", 1), sse: true, chat: true, kinds: "other,content,content,other,usage,done", text: "11111 22222 33333 "},
		{name: "crlf events", raw: sseHeader + rawChunk("data: [DONE]\r\n\r\n: ka\r\n\r\n") + "0\r\n\r\n", sse: true, chat: true, class: ClassMissingUsage, kinds: "done", reusable: true},
		{name: "bad chunk size", raw: sseHeader + "zz\r\n", sse: true, chat: true, class: ClassConnection, msg: "chunk size"},
		{name: "bad status line", raw: "HTTP/2 200\r\n\r\n", sse: true, chat: true, class: ClassConnection, msg: "status line"},
		{name: "non-streamed chat", raw: lenBody("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n", `{"id":"c","choices":[{"index":0,"message":{"content":"hello"},"finish_reason":"stop"}],"usage":{"prompt_tokens":2,"completion_tokens":1,"total_tokens":3}}`), chat: true, text: "hello", reusable: true},
		{name: "non-streamed missing usage", raw: lenBody("HTTP/1.1 200 OK\r\n", `{"choices":[{"index":0,"text":"abc","finish_reason":"stop"}]}`), class: ClassMissingUsage, text: "abc", reusable: true},
		{name: "token redacted", raw: "HTTP/1.1 401 Unauthorized\r\nContent-Length: 20\r\n\r\nbad token s3cr3t!!!!", sse: true, chat: true, class: ClassHTTPStatus, msg: "bad token [REDACTED]", reusable: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(3, uint64(len(tt.raw))))
			cutSets := [][]int{nil}
			all := []int{}
			for i := 1; i < len(tt.raw); i++ {
				all = append(all, i)
			}
			cutSets = append(cutSets, all)
			for range 10 {
				var cuts []int
				for i := 1; i < len(tt.raw); i++ {
					if rng.IntN(8) == 0 {
						cuts = append(cuts, i)
					}
				}
				cutSets = append(cutSets, cuts)
			}
			for _, cuts := range cutSets {
				st := runStream(tt.raw, cuts, tt.sse, tt.chat, tt.eof)
				r := &st.resp
				if !st.closed {
					t.Fatalf("cuts %d: stream not finished", len(cuts))
				}
				var gotClass contract.ErrorClass
				if r.Err != nil {
					gotClass = r.Err.Class
				}
				if gotClass != tt.class {
					t.Fatalf("cuts %d: class %q (%v), want %q", len(cuts), gotClass, r.Err, tt.class)
				}
				if tt.msg != "" && !strings.Contains(r.Err.Message, tt.msg) {
					t.Fatalf("message %q lacks %q", r.Err.Message, tt.msg)
				}
				if tt.kinds != "" && kinds(r.Events) != tt.kinds {
					t.Fatalf("kinds %s, want %s", kinds(r.Events), tt.kinds)
				}
				if tt.class == "" || tt.class == ClassMissingUsage {
					if string(r.Text) != tt.text {
						t.Fatalf("text %q, want %q", r.Text, tt.text)
					}
				}
				if st.reusable != tt.reusable {
					t.Fatalf("cuts %d: reusable %v, want %v", len(cuts), st.reusable, tt.reusable)
				}
				if tt.class == "" {
					if r.Usage == nil || r.Usage.TotalTokens != r.Usage.PromptTokens+r.Usage.CompletionTokens || !r.Complete || r.TEndNs == nil {
						t.Fatalf("success without usage, completeness or t_end: %+v", r)
					}
				} else if u := r.Usage; u != nil && u.TotalTokens != u.PromptTokens+u.CompletionTokens {
					t.Fatalf("failed request with inconsistent usage %+v", u)
				}
				if strings.Contains(fmt.Sprint(r.Err), "s3cr3t") {
					t.Fatal("token in the error message")
				}
			}
		})
	}
}

// TestStreamStamps: each event is stamped by the read that completed it; t_hdr by the read that
// completed the headers; t_end is the last content event, t_close the end of the response.
func TestStreamStamps(t *testing.T) {
	raw := okStream()
	// One read for the headers, one per event chunk (the terminal chunk with the [DONE] one).
	cuts := []int{len(sseHeader)}
	pos := len(sseHeader)
	evs := []string{evRole, evA, evBC, evFinish, evUsage}
	for _, e := range evs {
		payload := "data: " + e + "\n\n"
		pos += len(fmt.Sprintf("%x\r\n%s\r\n", len(payload), payload))
		cuts = append(cuts, pos)
	}
	// Split the [DONE] chunk inside its blank line: the event completes in the later read.
	cuts = append(cuts, pos+len("e\r\ndata: [DONE]\n"))
	st := runStream(raw, cuts, true, true, false)
	r := &st.resp
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	ms := func(k int) int64 { return int64(k) * int64(time.Millisecond) }
	if *r.THdrNs != ms(1) {
		t.Fatalf("t_hdr %d", *r.THdrNs)
	}
	want := []int64{ms(2), ms(3), ms(4), ms(5), ms(6), ms(8)}
	for i, e := range r.Events {
		if e.TNs != want[i] {
			t.Fatalf("event %d at %d, want %d", i, e.TNs, want[i])
		}
	}
	if *r.TEndNs != ms(4) || *r.TCloseNs != ms(8) {
		t.Fatalf("t_end %d t_close %d", *r.TEndNs, *r.TCloseNs)
	}
	if r.Events[2].Bytes != int64(len(evBC)) {
		t.Fatalf("event bytes %d, want %d", r.Events[2].Bytes, len(evBC))
	}
	if r.ID != "chatcmpl-1" || *r.FinishReason != "length" || r.Usage.CompletionTokens != 3 {
		t.Fatalf("id %q finish %v usage %+v", r.ID, *r.FinishReason, r.Usage)
	}
}

// TestStreamEmptyCompletion: a stream without any content event ends at [DONE].
func TestStreamEmptyCompletion(t *testing.T) {
	st := runStream(sseHeader+chunked(evRole, evFinish, evUsage, evDone), nil, true, true, false)
	r := &st.resp
	if r.Err != nil || r.TEndNs == nil || *r.TEndNs != r.Events[len(r.Events)-1].TNs || len(r.Text) != 0 {
		t.Fatalf("err %v t_end %v", r.Err, r.TEndNs)
	}
}

// FuzzResponse feeds arbitrary bytes as a response: the stream must end (or wait for more)
// without panicking, a success must carry a consistent usage record, and the outcome must not
// depend on how the bytes were cut into reads.
func FuzzResponse(f *testing.F) {
	f.Add([]byte(okStream()), uint64(1))
	f.Add([]byte(sseHeader+chunked(evA, evUsageX, evDone)), uint64(2))
	f.Add([]byte("HTTP/1.1 429 x\r\nContent-Length: 3\r\n\r\nabc"), uint64(3))
	f.Add([]byte("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\ndata: [DONE]\n\n"), uint64(4))
	f.Fuzz(func(t *testing.T, raw []byte, seed uint64) {
		rng := rand.New(rand.NewPCG(seed, 9))
		var cuts []int
		for i := 1; i < len(raw); i++ {
			if rng.IntN(4) == 0 {
				cuts = append(cuts, i)
			}
		}
		a := runStream(string(raw), nil, true, true, true)
		b := runStream(string(raw), cuts, true, true, true)
		if fmt.Sprint(a.resp.Err) != fmt.Sprint(b.resp.Err) || kinds(a.resp.Events) != kinds(b.resp.Events) || string(a.resp.Text) != string(b.resp.Text) {
			t.Fatalf("outcome depends on the cuts: %v / %v, %s / %s", a.resp.Err, b.resp.Err, kinds(a.resp.Events), kinds(b.resp.Events))
		}
		if r := &a.resp; r.Err == nil && (r.Usage == nil || r.Usage.TotalTokens != r.Usage.PromptTokens+r.Usage.CompletionTokens) {
			t.Fatalf("success without a consistent usage record: %+v", r.Usage)
		}
	})
}
