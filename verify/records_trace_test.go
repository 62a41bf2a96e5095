package verify

import (
	"bytes"
	"testing"
)

// TestParseRecordTraceEntry: the fast path reads a record's trace_entry as DecodeInto does (a
// parent or null), and declines one outside the contract's bounds or with an unknown member.
func TestParseRecordTraceEntry(t *testing.T) {
	line := realRecordLines(t)[0]
	with := func(te string) []byte {
		return bytes.Replace(line, []byte(`"index":`), []byte(`"trace_entry":`+te+`,"index":`), 1)
	}
	for _, te := range []string{`{"entry":3,"parent":1,"turn":2}`, `{"entry":0,"parent":null,"turn":1}`} {
		if !checkAgreement(t, with(te)) {
			t.Errorf("%s: the fast path declined it", te)
		}
	}
	for _, te := range []string{`{"entry":3,"parent":1}`, `{"entry":3,"parent":1,"turn":0}`, `{"entry":1000000,"parent":null,"turn":1}`, `{"entry":3,"parent":1,"turn":2,"session":"x"}`} {
		if checkAgreement(t, with(te)) {
			t.Errorf("%s: the fast path accepted it", te)
		}
	}
}
