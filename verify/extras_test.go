package verify

import (
	"bytes"
	"context"
	"io"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/qualkit/qualkit/schemas"
	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/jsonstrict"
	"github.com/qualkit/qualkit/verify/internal/record"
)

// extraOfDoc is the Extra of a decoded request record, as the checks define it.
func extraOfDoc(d *contract.RequestRecordDoc) record.Extra {
	e := record.Extra{OK: true}
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

// checkExtraAgreement: for a line the contract accepts as a request record, ExtraOf reads what the
// strict decoder reads.
func checkExtraAgreement(t testing.TB, line []byte) bool {
	t.Helper()
	got := record.ExtraOf(line)
	out, err := schemas.CheckDocument(line)
	if err != nil || !out.Valid() || out.Contract.Name != contract.RequestRecord {
		return false
	}
	var doc contract.RequestRecordDoc
	if err := jsonstrict.DecodeInto(line, &doc); err != nil {
		t.Fatalf("DecodeInto: %v", err)
	}
	if want := extraOfDoc(&doc); !reflect.DeepEqual(got, want) {
		t.Fatalf("ExtraOf read\n%+v\nDecodeInto reads\n%+v\nof %s", got, want, line)
	}
	return true
}

// TestExtraOf: real records and edits of them (an escaped message, a null seed, another status,
// reordered members) are read as the strict decoder reads them, by the scan or, with a backslash,
// by encoding/json.
func TestExtraOf(t *testing.T) {
	lines := realRecordLines(t)
	var variants [][]byte
	for _, l := range lines {
		variants = append(variants, l,
			bytes.Replace(l, []byte(`"seed":1235`), []byte(`"seed":null`), 1),
			bytes.Replace(l, []byte(`"status_code":200`), []byte(`"status_code":503`), 1),
			bytes.Replace(l, []byte(`"error":null`), []byte(`"error":{"class":"assertion","message":"said \"no\" \\ here"}`), 1),
		)
	}
	n := 0
	for _, v := range variants {
		if checkExtraAgreement(t, v) {
			n++
		}
	}
	if n < len(lines) {
		t.Fatalf("%d of %d lines agreed", n, len(variants))
	}
	if e := record.ExtraOf([]byte(`{"seed": 1, "status_code": [`)); e.OK {
		t.Fatalf("an unterminated line read as %+v", e)
	}
}

// TestTapReadsEveryLine: the tap passes the bytes through unchanged and gives each line's Extra
// however the reads split it.
func TestTapReadsEveryLine(t *testing.T) {
	lines := realRecordLines(t)
	data := string(bytes.Join(lines, []byte("\n"))) // no final newline: the last line at EOF
	for name, wrap := range map[string]func(io.Reader) io.Reader{
		"whole":    func(r io.Reader) io.Reader { return r },
		"one byte": iotest.OneByteReader,
		"half":     iotest.HalfReader,
	} {
		t.Run(name, func(t *testing.T) {
			tap := record.NewTap(wrap(strings.NewReader(data)))
			_, _, set, err := record.Read(context.Background(), tap)
			if err != nil {
				t.Fatal(err)
			}
			ex := tap.Extras()
			if len(ex) != len(lines) || len(set.Records) != len(lines) {
				t.Fatalf("%d extras, %d records of %d lines", len(ex), len(set.Records), len(lines))
			}
			for i, l := range lines {
				if !reflect.DeepEqual(ex[i], record.ExtraOf(l)) || !ex[i].OK {
					t.Fatalf("line %d: %+v", i, ex[i])
				}
			}
		})
	}
}

// FuzzExtraOf: ExtraOf reads a valid request record as the strict decoder does, and any line
// without panicking.
func FuzzExtraOf(f *testing.F) {
	for _, l := range realRecordLines(f) {
		f.Add(l)
	}
	f.Add([]byte(`{"seed":-1,"events":[{"kind":"done"}],"status_code":200}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		checkExtraAgreement(t, line)
	})
}
