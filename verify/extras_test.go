package verify

import (
	"bytes"
	"context"
	"testing"

	"github.com/qualkit/qualkit/schemas"
	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/jsonstrict"
	"github.com/qualkit/qualkit/verify/internal/record"
)

// requestExtra is what rowcheck.requestExtras reads of a request record beyond its times and
// tokens: its status, seed and assertion kinds.
type requestExtra struct {
	Status, Seed       int64
	HasStatus, HasSeed bool
	Assertions         string
}

func extraOfRecord(r *record.Record) requestExtra {
	return requestExtra{Status: r.Status, Seed: r.Seed, HasStatus: r.HasStatus, HasSeed: r.HasSeed, Assertions: r.Assertions}
}

// extraOfDoc is the extra of a decoded request record, as the checks define it (written here
// apart from record.FromDoc, so neither path is its own oracle).
func extraOfDoc(d *contract.RequestRecordDoc) requestExtra {
	var e requestExtra
	if d.StatusCode != nil {
		e.Status, e.HasStatus = *d.StatusCode, true
	}
	if d.Seed != nil {
		e.Seed, e.HasSeed = *d.Seed, true
	}
	var kinds []contract.AssertionOutcomeKind
	for _, a := range d.Assertions {
		kinds = append(kinds, a.Kind)
	}
	e.Assertions = record.AssertionKinds(kinds)
	return e
}

// checkExtraAgreement: for a line the contract accepts as a request record, Read (the fast path,
// or else the strict decoder) reads the status, seed and assertion kinds the strict decoder reads.
// It reports whether the line is a valid record and whether the fast path took it.
func checkExtraAgreement(t testing.TB, line []byte) (valid, fast bool) {
	t.Helper()
	_, fast = record.Parse(line)
	_, _, set, err := record.Read(context.Background(), bytes.NewReader(line))
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	out, err := schemas.CheckDocument(line)
	if err != nil || !out.Valid() || out.Contract.Name != contract.RequestRecord || bytes.ContainsAny(line, "\n\r") {
		return false, fast
	}
	var doc contract.RequestRecordDoc
	if err := jsonstrict.DecodeInto(line, &doc); err != nil {
		t.Fatalf("DecodeInto: %v", err)
	}
	if len(set.Records) != 1 {
		t.Fatalf("Read kept %d records of a valid line (%v):\n%s", len(set.Records), set.Invalid, line)
	}
	if got, want := extraOfRecord(&set.Records[0]), extraOfDoc(&doc); got != want {
		t.Fatalf("Read read\n%+v\nDecodeInto reads\n%+v\nof %s", got, want, line)
	}
	return true, fast
}

// TestRecordExtras: real records and edits of them (a null seed, another status, no assertions,
// reordered assertions, an escaped message) are read as the strict decoder reads them: by the
// fast path, and with a backslash by the strict decoder.
func TestRecordExtras(t *testing.T) {
	lines := realRecordLines(t)
	var fastVariants, slowVariants [][]byte
	for _, l := range lines {
		fastVariants = append(fastVariants, l,
			bytes.Replace(l, []byte(`"seed":1235`), []byte(`"seed":null`), 1),
			bytes.Replace(l, []byte(`"status_code":200`), []byte(`"status_code":503`), 1),
			bytes.Replace(l, []byte(`"status_code":200`), []byte(`"status_code":null`), 1),
		)
		slowVariants = append(slowVariants,
			bytes.Replace(l, []byte(`"error":null`), []byte(`"error":{"class":"assertion","message":"said \"no\" \\ here"}`), 1))
	}
	// Assertion lists: none, one of each kind, and every kind twice in reverse order.
	kinds := contract.AssertionOutcomeKindValues()
	var lists []string
	lists = append(lists, `[]`)
	var all []string
	for i := len(kinds) - 1; i >= 0; i-- {
		a := `{"kind":"` + string(kinds[i]) + `","passed":true,"detail":null}`
		lists = append(lists, `[`+a+`]`)
		all = append(all, a, a)
	}
	lists = append(lists, `[`+string(bytes.Join(toBytes(all), []byte(",")))+`]`)
	for _, l := range lines {
		i := bytes.Index(l, []byte(`"assertions":[`))
		if i < 0 {
			continue
		}
		j := i + bytes.IndexByte(l[i:], ']')
		for _, a := range lists {
			fastVariants = append(fastVariants, append(append(append([]byte{}, l[:i]...), `"assertions":`+a...), l[j+1:]...))
		}
	}
	for _, v := range fastVariants {
		if valid, fast := checkExtraAgreement(t, v); valid && !fast {
			t.Errorf("the fast path declined a valid record:\n%s", v)
		}
	}
	n := 0
	for _, v := range slowVariants {
		valid, fast := checkExtraAgreement(t, v)
		if fast {
			t.Errorf("the fast path took a line with an escape:\n%s", v)
		}
		if valid {
			n++
		}
	}
	if n == 0 {
		t.Fatal("no escaped line was a valid record: the strict decoder's path is untested")
	}
}

func toBytes(ss []string) [][]byte {
	out := make([][]byte, len(ss))
	for i, s := range ss {
		out[i] = []byte(s)
	}
	return out
}

// FuzzExtraOf: Read (the fast path, or else the strict decoder) reads a valid request record's
// status, seed and assertion kinds as the strict decoder does, and any line without panicking.
func FuzzExtraOf(f *testing.F) {
	for _, l := range realRecordLines(f) {
		f.Add(l)
	}
	f.Add([]byte(`{"seed":-1,"events":[{"kind":"done"}],"status_code":200}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		checkExtraAgreement(t, line)
	})
}
