package verify

import (
	"regexp"
	"strconv"
	"testing"

	"github.com/qualkit/qualkit/schemas"
	"github.com/qualkit/qualkit/verify/internal/record"
)

// TestParseRecordSent: t_sent_ns (the return of the request's write, which the fidelity
// judgement credits) is read by the fast path as by the strict decoder, and a t_sent_ns before
// t_send_ns is refused by both.
func TestParseRecordSent(t *testing.T) {
	line := realRecordLines(t)[1]
	m := regexp.MustCompile(`"t_send_ns":(\d+),`).FindSubmatchIndex(line)
	if m == nil {
		t.Fatalf("no t_send_ns in %s", line)
	}
	send, _ := strconv.ParseInt(string(line[m[2]:m[3]]), 10, 64)
	with := func(sent int64) []byte {
		out := append([]byte{}, line[:m[1]]...)
		out = strconv.AppendInt(append(out, `"t_sent_ns":`...), sent, 10)
		return append(append(out, ','), line[m[1]:]...)
	}
	ok := with(send + 5_000)
	if !checkAgreement(t, ok) {
		t.Fatalf("the fast path declined a record with t_sent_ns:\n%s", ok)
	}
	if rec, _ := record.Parse(ok); !rec.HasSent || rec.Sent != send+5_000 {
		t.Fatalf("read sent %d (has %v), want %d", rec.Sent, rec.HasSent, send+5_000)
	}
	bad := with(send - 1)
	if _, accepted := record.Parse(bad); accepted {
		t.Errorf("the fast path accepted t_sent_ns before t_send_ns")
	}
	out, err := schemas.CheckDocument(bad)
	if err != nil {
		t.Fatal(err)
	}
	if out.Valid() {
		t.Errorf("CheckDocument accepted t_sent_ns before t_send_ns")
	}
}
