package verify

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/jsonstrict"
	"github.com/qualkit/qualkit/schemas/metric"
	"github.com/qualkit/qualkit/verify/internal/record"
)

// TestOneRecordMapping: the verifier's reading of a request record gives the catalogue exactly
// the inputs the runner's does (metric.RequestOf), on real records and on variants with every
// member that feeds a formula: reasoning and tool-call events and usage, cached and client
// tokens, a session turn, the write stamp t_sent_ns and tool calls. A formula's input is then
// one mapping, whichever side reads the record.
func TestOneRecordMapping(t *testing.T) {
	lines := realRecordLines(t)
	base := lines[len(lines)-1]
	variants := [][]byte{
		bytes.Replace(base, []byte(`"kind":"content"`), []byte(`"kind":"reasoning"`), 1),
		bytes.Replace(base, []byte(`"kind":"content"`), []byte(`"kind":"tool_call"`), 2),
		bytes.Replace(base, []byte(`"error":null`), []byte(`"error":null,"cached_prompt_tokens":3,"client_tokens":{"prompt_tokens":7,"completion_tokens":2},"session":{"id":"s-1","turn":1,"history_messages":3,"history_chars":40,"reply_digests":[],"think_ms":0},"tool_calls":[{"index":0,"id":"c1","name":"f","arguments_digest":"sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a","arguments_bytes":2,"arguments":"{}","valid":true}]`), 1),
	}
	if bytes.Contains(base, []byte(`"t_send_ns":`)) {
		variants = append(variants, bytes.Replace(base, []byte(`"t_hdr_ns":`), []byte(`"t_sent_ns":999999999999,"t_hdr_ns":`), 1))
	}
	checked := 0
	for i, line := range append(lines, variants...) {
		var doc contract.RequestRecordDoc
		if err := jsonstrict.DecodeInto(line, &doc); err != nil {
			if i >= len(lines) {
				t.Fatalf("variant %d does not decode: %v\n%s", i-len(lines), err, line)
			}
			continue
		}
		runner := metric.RequestOf(&doc)
		rec := record.FromDoc(&doc)
		verifier := rec.Request()
		if len(runner.Content) == 0 && len(verifier.Content) == 0 {
			runner.Content, verifier.Content = nil, nil
		}
		if !reflect.DeepEqual(runner, verifier) {
			t.Errorf("line %d: the runner's inputs\n%+v\nthe verifier's\n%+v", i, runner, verifier)
		}
		checked++
	}
	if checked < len(lines)/2 || checked < 4 {
		t.Fatalf("only %d records checked", checked)
	}
}
