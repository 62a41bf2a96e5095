package load

import (
	"bytes"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/qualkit/qualkit/schemas/contract"
)

type sseEv struct{ Type, Data string }

// parseAll feeds in through the parser in pieces cut at the given offsets.
func parseAll(in []byte, cuts []int, maxLine int, strict bool) ([]sseEv, contract.ErrorClass) {
	p := newSSEParser(maxLine, strict)
	var evs []sseEv
	h := func(typ, data []byte) error {
		evs = append(evs, sseEv{string(typ), string(data)})
		return nil
	}
	prev := 0
	for _, c := range append(cuts, len(in)) {
		if c < prev || c > len(in) {
			continue
		}
		// Copy each piece so that the parser cannot keep a reference into the caller's buffer.
		piece := append([]byte(nil), in[prev:c]...)
		if err := p.feed(piece, h); err != nil {
			return evs, err.(*sseError).class
		}
		for i := range piece {
			piece[i] = 'X' // a later feed must not see these bytes
		}
		prev = c
	}
	return evs, ""
}

// refParse is a direct transcription of the WHATWG rules over the whole input, the oracle of
// the incremental parser.
func refParse(in []byte, maxLine int, strict bool) ([]sseEv, contract.ErrorClass) {
	var evs []sseEv
	var data strings.Builder
	nData := 0
	typ := ""
	first := true
	for len(in) > 0 {
		i := bytes.IndexAny(in, "\r\n")
		if i < 0 {
			if len(in) > maxLine {
				return evs, ClassOversizeLine
			}
			break // an unterminated last line is discarded
		}
		line := in[:i]
		if in[i] == '\r' && i+1 < len(in) && in[i+1] == '\n' {
			i++
		}
		in = in[i+1:]
		if len(line) > maxLine {
			return evs, ClassOversizeLine
		}
		if first {
			line = bytes.TrimPrefix(line, utf8BOM)
			first = false
		}
		switch {
		case len(line) == 0:
			if nData > 0 {
				evs = append(evs, sseEv{typ, data.String()})
			}
			data.Reset()
			nData, typ = 0, ""
		case line[0] == ':':
		default:
			field, value := string(line), ""
			if k := bytes.IndexByte(line, ':'); k >= 0 {
				field, value = string(line[:k]), strings.TrimPrefix(string(line[k+1:]), " ")
			}
			switch field {
			case "data":
				if nData > 0 {
					data.WriteByte('\n')
				}
				data.WriteString(value)
				nData++
				if data.Len() > MaxEventDataBytes {
					return evs, ClassOversizeLine
				}
			case "event":
				typ = value
			case "id", "retry":
			default:
				if strict {
					return evs, ClassMalformedEvent
				}
			}
		}
	}
	return evs, ""
}

func TestSSEParser(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		strict bool
		want   []sseEv
		class  contract.ErrorClass
	}{
		{name: "lf", in: "data: a\n\ndata: b\n\n", want: []sseEv{{"", "a"}, {"", "b"}}},
		{name: "crlf", in: "data: a\r\n\r\ndata: b\r\n\r\n", want: []sseEv{{"", "a"}, {"", "b"}}},
		{name: "cr", in: "data: a\r\rdata: b\r\r", want: []sseEv{{"", "a"}, {"", "b"}}},
		{name: "mixed ends", in: "data: a\r\n\ndata: b\n\r\n", want: []sseEv{{"", "a"}, {"", "b"}}},
		{name: "multi-line data", in: "data: one\ndata:two\ndata:  three\n\n", want: []sseEv{{"", "one\ntwo\n three"}}},
		{name: "comments and keep-alives", in: ": ping\n\n:\ndata: x\n: mid\n\n", want: []sseEv{{"", "x"}}},
		{name: "id and retry ignored", in: "id: 7\nretry: 100\ndata: x\n\n", strict: true, want: []sseEv{{"", "x"}}},
		{name: "event type", in: "event: error\ndata: boom\n\ndata: next\n\n", want: []sseEv{{"error", "boom"}, {"", "next"}}},
		{name: "field without colon", in: "data\n\n", want: []sseEv{{"", ""}}},
		{name: "empty data dispatches", in: "data:\n\n", want: []sseEv{{"", ""}}},
		{name: "no data no event", in: "event: x\n\n", want: nil},
		{name: "bom", in: "\xEF\xBB\xBFdata: a\n\n", want: []sseEv{{"", "a"}}},
		{name: "bom only first", in: "data: a\n\n\xEF\xBB\xBFdata: b\n\n", want: []sseEv{{"", "a"}}},
		{name: "incomplete event discarded", in: "data: a\n\ndata: b\n", want: []sseEv{{"", "a"}}},
		{name: "unknown field lenient", in: "{\"id\":1}\ndata: a\n\n", want: []sseEv{{"", "a"}}},
		{name: "unknown field strict", in: "data: a\n\n{\"id\":1}\n\n", strict: true, want: []sseEv{{"", "a"}}, class: ClassMalformedEvent},
		{name: "line at limit", in: "data: " + strings.Repeat("x", 58) + "\n\n", want: []sseEv{{"", strings.Repeat("x", 58)}}},
		{name: "line over limit", in: "data: a\n\ndata: " + strings.Repeat("x", 59) + "\n\n", want: []sseEv{{"", "a"}}, class: ClassOversizeLine},
		{name: "unterminated line over limit", in: "data: " + strings.Repeat("x", 100), class: ClassOversizeLine},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := []byte(tt.in)
			// One piece, every byte alone, and random cuts must agree.
			cutSets := [][]int{nil, nil}
			for i := 1; i < len(in); i++ {
				cutSets[1] = append(cutSets[1], i)
			}
			rng := rand.New(rand.NewPCG(1, uint64(len(in))))
			for range 20 {
				var cuts []int
				for i := 1; i < len(in); i++ {
					if rng.IntN(4) == 0 {
						cuts = append(cuts, i)
					}
				}
				cutSets = append(cutSets, cuts)
			}
			for _, cuts := range cutSets {
				evs, class := parseAll(in, cuts, 64, tt.strict)
				if class != tt.class || !reflect.DeepEqual(evs, tt.want) {
					t.Fatalf("cuts %v: got %q %q, want %q %q", cuts, evs, class, tt.want, tt.class)
				}
			}
			if evs, class := refParse(in, 64, tt.strict); class != tt.class || !reflect.DeepEqual(evs, tt.want) {
				t.Fatalf("reference: got %q %q, want %q %q", evs, class, tt.want, tt.class)
			}
		})
	}
}

// TestSSEOversizeLineIsBounded: a line far longer than the limit fails as soon as the limit is
// passed, without buffering the rest (no bufio.Scanner-style 64 KiB stop, no unbounded growth).
func TestSSEOversizeLineIsBounded(t *testing.T) {
	p := newSSEParser(1<<20, true)
	chunk := bytes.Repeat([]byte("x"), 64<<10)
	if err := p.feed([]byte("data: "), func(_, _ []byte) error { return nil }); err != nil {
		t.Fatal(err)
	}
	var err error
	fed := 0
	for i := 0; i < 1000 && err == nil; i++ {
		err = p.feed(chunk, func(_, _ []byte) error { return nil })
		fed += len(chunk)
	}
	se, ok := err.(*sseError)
	if !ok || se.class != ClassOversizeLine {
		t.Fatalf("err = %v, want oversize_line", err)
	}
	if fed > 1<<20+len(chunk) {
		t.Fatalf("fed %d bytes before the error", fed)
	}
	if cap(p.partial) > 2<<20 {
		t.Fatalf("buffered %d bytes", cap(p.partial))
	}
	// A line of 1 MiB exactly (above bufio.Scanner's default) is fine.
	p = newSSEParser(1<<20, true)
	line := append([]byte("data: "), bytes.Repeat([]byte("y"), 1<<20-6)...)
	var got int
	if err := p.feed(append(line, "\n\n"...), func(_, d []byte) error { got = len(d); return nil }); err != nil || got != 1<<20-6 {
		t.Fatalf("1 MiB line: err %v, data %d bytes", err, got)
	}
}

// FuzzSSE checks the incremental parser against the reference on arbitrary input cut at
// arbitrary points: the same events, the same error class, no panic.
func FuzzSSE(f *testing.F) {
	for _, s := range []string{
		"data: a\n\n", "data: a\r\n\r\n", "data: a\r\rdata: b\r\r", "data: x\ndata: y\n\n", ": c\n\n",
		"event: e\ndata: d\n\n", "\xEF\xBB\xBFdata: a\n\n", "data: [DONE]\n\n", "data\n\n", "data:\r",
		"x\n\n", "data: " + strings.Repeat("z", 70) + "\n\n", "id: 1\nretry: 2\ndata: 3\n\n",
		"data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n",
	} {
		f.Add([]byte(s), uint64(0), false)
		f.Add([]byte(s), uint64(0x0123456789abcdef), true)
	}
	f.Fuzz(func(t *testing.T, in []byte, cutSeed uint64, strict bool) {
		maxLine := 16 + int(cutSeed>>56) // 16..271: small enough that lines go over it
		rng := rand.New(rand.NewPCG(cutSeed, 7))
		var cuts []int
		for i := 1; i < len(in); i++ {
			if rng.IntN(3) == 0 {
				cuts = append(cuts, i)
			}
		}
		wantEv, wantClass := refParse(in, maxLine, strict)
		gotEv, gotClass := parseAll(in, cuts, maxLine, strict)
		if gotClass != wantClass || !reflect.DeepEqual(gotEv, wantEv) {
			t.Fatalf("maxLine %d strict %v cuts %v:\ngot  %q %q\nwant %q %q", maxLine, strict, cuts, gotEv, gotClass, wantEv, wantClass)
		}
	})
}

func BenchmarkSSEParser(b *testing.B) {
	ev := []byte(`data: {"id":"chatcmpl-qs-1","object":"chat.completion.chunk","created":1,"model":"qualsim-tiny","system_fingerprint":"qualsim","choices":[{"index":0,"delta":{"content":"12345 "},"logprobs":null,"finish_reason":null}],"usage":null}` + "\n\n")
	p := newSSEParser(DefaultMaxLineBytes, true)
	h := func(_, _ []byte) error { return nil }
	b.SetBytes(int64(len(ev)))
	for b.Loop() {
		if err := p.feed(ev, h); err != nil {
			b.Fatal(err)
		}
	}
}
