package verify

import (
	"bytes"
	"strings"
	"testing"
)

// TestParseRecordTraceEntry: the fast path reads a record's trace_entry as DecodeInto does (a
// parent or null, a join's parents), and declines one outside the contract's bounds (a list of
// fewer than 2 or more than 64 parents included) or with an unknown member.
func TestParseRecordTraceEntry(t *testing.T) {
	line := realRecordLines(t)[0]
	with := func(te string) []byte {
		return bytes.Replace(line, []byte(`"index":`), []byte(`"trace_entry":`+te+`,"index":`), 1)
	}
	for _, te := range []string{`{"entry":3,"parent":1,"turn":2}`, `{"entry":0,"parent":null,"turn":1}`, `{"entry":9,"parent":null,"parents":[2,5],"turn":4}`, `{"entry":9,"parent":null,"turn":4,"parents":[0,1,2]}`} {
		if !checkAgreement(t, with(te)) {
			t.Errorf("%s: the fast path declined it", te)
		}
	}
	for _, te := range []string{`{"entry":3,"parent":1}`, `{"entry":3,"parent":1,"turn":0}`, `{"entry":1000000,"parent":null,"turn":1}`, `{"entry":3,"parent":1,"turn":2,"session":"x"}`, `{"entry":9,"parent":null,"parents":[2],"turn":4}`, `{"entry":9,"parent":null,"parents":[],"turn":4}`, `{"entry":9,"parent":null,"parents":[2,1000000],"turn":4}`, `{"entry":9,"parent":null,"parents":[1,2],"parents":[1,2],"turn":4}`, `{"entry":9,"parent":null,"parents":[` + strings.Repeat("1,", 64) + `1],"turn":4}`} {
		if checkAgreement(t, with(te)) {
			t.Errorf("%s: the fast path accepted it", te)
		}
	}
}
