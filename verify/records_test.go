package verify

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/qualkit/qualkit/schemas"
	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/evidence"
	"github.com/qualkit/qualkit/schemas/jsonstrict"
	"github.com/qualkit/qualkit/verify/internal/record"
)

// realRecordLines returns the request record lines of the frozen campaign.
func realRecordLines(t testing.TB) [][]byte {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(frozenRoot, ".qualification/runs/*/cases/*/rows/*.jsonl"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no frozen records: %v", err)
	}
	var out [][]byte
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n"))...)
	}
	return out
}

// checkAgreement asserts the fast path's contract: it accepts a line only if CheckDocument
// accepts it as a request record, and then extracts what DecodeInto would.
func checkAgreement(t testing.TB, line []byte) (accepted bool) {
	t.Helper()
	rec, ok := record.Parse(line)
	if !ok {
		return false
	}
	out, err := schemas.CheckDocument(line)
	if err != nil {
		t.Fatalf("CheckDocument: %v", err)
	}
	if !out.Valid() || out.Contract.Name != contract.RequestRecord {
		t.Fatalf("the fast path accepted a line CheckDocument rejects (%v):\n%s", out.Violations, line)
	}
	var doc contract.RequestRecordDoc
	if err := jsonstrict.DecodeInto(line, &doc); err != nil {
		t.Fatalf("DecodeInto: %v", err)
	}
	want := record.FromDoc(&doc)
	if !reflect.DeepEqual(rec, want) {
		t.Fatalf("fast path read\n%+v\nDecodeInto reads\n%+v", rec, want)
	}
	return true
}

func TestParseRecordAcceptsRealRecords(t *testing.T) {
	for i, l := range realRecordLines(t) {
		if !checkAgreement(t, l) {
			t.Errorf("line %d: the fast path declined a record the runner wrote:\n%s", i, l)
		}
	}
}

// TestParseRecordDeclines: each change makes the line invalid (or valid but outside the fast
// path); the fast path must decline it, and the slow path decides.
func TestParseRecordDeclines(t *testing.T) {
	line := string(realRecordLines(t)[1])
	cases := []struct {
		name, old, new string
		stillValid     bool
	}{
		{"unknown member", `"warmup":false`, `"warmup":false,"thermal":1`, false},
		{"duplicate member", `"warmup":false`, `"warmup":false,"warmup":false`, false},
		{"wrong schema", `qualkit.request-record.v1`, `qualkit.request-record.v2`, false},
		{"float index", `"index":1,`, `"index":1.0,`, false},
		{"exponent", `"index":1,`, `"index":1e0,`, false},
		{"negative time", `"t_sched_ns":`, `"t_sched_ns":-`, false},
		{"leading zero", `"index":1,`, `"index":01,`, false},
		{"bad digest", `"body_digest":"sha256:`, `"body_digest":"sha256:X`, false},
		{"bad kind", `"kind":"content"`, `"kind":"token"`, false},
		{"total != prompt + completion", `"total_tokens":`, `"total_tokens":1`, false},
		{"trailing data", `"error":null}`, `"error":null} x`, false},
		{"missing member", `"warmup":false,`, ``, false},
		{"escaped string (valid, slow path)", `"prompt_id":"`, `"prompt_id":"\u0063`, true},
		{"spaces (valid, fast path ok)", `"index":1,`, `"index" : 1 ,`, true},
	}
	for _, tc := range cases {
		if !strings.Contains(line, tc.old) {
			t.Fatalf("%s: %q not in the line", tc.name, tc.old)
		}
		mutated := []byte(strings.Replace(line, tc.old, tc.new, 1))
		accepted := checkAgreement(t, mutated)
		out, err := schemas.CheckDocument(mutated)
		if err != nil {
			t.Fatal(err)
		}
		if out.Valid() != tc.stillValid {
			t.Errorf("%s: CheckDocument valid %v, want %v (%v)", tc.name, out.Valid(), tc.stillValid, out.Violations)
		}
		if accepted && !tc.stillValid {
			t.Errorf("%s: accepted", tc.name)
		}
	}
}

// FuzzParseRecord: the fast path never accepts what the contract rejects, and reads what the
// strict decoder reads.
func FuzzParseRecord(f *testing.F) {
	for _, l := range realRecordLines(f) {
		f.Add(l)
	}
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		checkAgreement(t, line)
	})
}

func TestReadRecords(t *testing.T) {
	lines := realRecordLines(t)
	good := bytes.Join(lines[:3], []byte("\n"))
	cases := []struct {
		name         string
		data         string
		records      int
		invalidLines int
	}{
		{"valid file", string(good) + "\n", 3, 0},
		{"no final newline", string(good), 3, 0},
		{"blank line", string(lines[0]) + "\n\n" + string(lines[1]) + "\n", 2, 1},
		{"one invalid line", string(lines[0]) + "\n{\"schema\":\"qualkit.request-record.v1\"}\n" + string(lines[1]) + "\n", 2, 1},
		{"a receipt among records", string(lines[0]) + "\n" + `{"schema":"qualkit.launch-recipe.v1"}` + "\n", 1, 1},
	}
	for _, tc := range cases {
		d, n, set, err := record.Read(context.Background(), strings.NewReader(tc.data))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if d != evidence.DigestOf([]byte(tc.data)) || n != int64(len(tc.data)) {
			t.Errorf("%s: digest %s size %d, want the file's", tc.name, d, n)
		}
		if len(set.Records) != tc.records || set.InvalidLines != tc.invalidLines {
			t.Errorf("%s: %d records, %d invalid lines; want %d, %d (%v)", tc.name, len(set.Records), set.InvalidLines, tc.records, tc.invalidLines, set.Invalid)
		}
		for _, v := range set.Invalid {
			if !strings.HasPrefix(v.Pointer, "/") {
				t.Errorf("%s: pointer %q", tc.name, v.Pointer)
			}
		}
	}
}

func TestOutputSetMatchesCanonical(t *testing.T) {
	rs := []*record.Record{{Output: evidence.DigestOf([]byte("a"))}, {Output: evidence.DigestOf([]byte("b"))}}
	b, err := jsonstrict.Canonical([]string{rs[0].Output, rs[1].Output})
	if err != nil {
		t.Fatal(err)
	}
	if got := record.OutputSet(rs); got == nil || *got != evidence.DigestOf(b) {
		t.Fatalf("output set %v, canonical %s", got, evidence.DigestOf(b))
	}
	if record.OutputSet([]*record.Record{{Failed: true}}) != nil {
		t.Fatal("a failed request has an output set")
	}
}

func TestPercentileType7(t *testing.T) {
	xs := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for q, want := range map[float64]float64{0: 1, 0.5: 5.5, 0.9: 9.1, 0.99: 9.91, 1: 10} {
		if got := record.Percentile(xs, q); !record.Within(got, want, Tolerance{Absolute: 1e-12, Relative: 0}) {
			t.Errorf("p%v = %v, want %v (numpy linear)", q, got, want)
		}
	}
}

// TestReadKeepsEachRecord: Read's fast path (interning ids, carving token arrivals from an arena)
// keeps every record of a long file as the strict decoder reads it: a rejected line between, a
// record without token events and arena chunks filled and renewed leave no record changed.
func TestReadKeepsEachRecord(t *testing.T) {
	lines := realRecordLines(t)
	noTokens := regexp.MustCompile(`"kind":"(content|reasoning|tool_call)"`).ReplaceAll(lines[1], []byte(`"kind":"other"`))
	rejected := bytes.Replace(lines[1], []byte(`"total_tokens":`), []byte(`"total_tokens":1`), 1) // fails late, after its events
	// More token events than an arena chunk's free space: appended beyond it.
	ev := regexp.MustCompile(`\{"t_ns":[0-9]+,"kind":"content","bytes":[0-9]+\}`).Find(lines[1])
	long := bytes.Replace(lines[1], ev, bytes.Join(slices.Repeat([][]byte{ev}, 2000), []byte(",")), 1)
	var file [][]byte
	for len(file) < 40000 {
		file = append(file, lines...)
		file = append(file, noTokens, rejected)
		if len(file)%7 == 0 {
			file = append(file, long)
		}
	}
	_, _, set, err := record.Read(context.Background(), bytes.NewReader(bytes.Join(file, []byte("\n"))))
	if err != nil {
		t.Fatal(err)
	}
	if set.InvalidLines == 0 {
		t.Fatal("the rejected line was kept")
	}
	want := map[string]record.Record{}
	for _, r := range set.Records {
		l := file[r.Line]
		w, ok := want[string(l)]
		if !ok {
			var doc contract.RequestRecordDoc
			if err := jsonstrict.DecodeInto(l, &doc); err != nil {
				t.Fatal(err)
			}
			w = record.FromDoc(&doc)
			want[string(l)] = w
		}
		w.Line = r.Line
		if cap(r.Content) != len(r.Content) {
			t.Fatalf("line %d: token arrivals with room to append into the next record's (cap %d, len %d)", r.Line, cap(r.Content), len(r.Content))
		}
		if !reflect.DeepEqual(r, w) {
			t.Fatalf("line %d: Read kept\n%+v\nthe strict decoder reads\n%+v", r.Line, r, w)
		}
	}
	longest := 0
	for _, r := range set.Records {
		longest = max(longest, len(r.Content))
	}
	if longest < 2000 {
		t.Fatalf("the longest record kept has %d token arrivals", longest)
	}
	if len(set.Records)+set.InvalidLines != len(file) {
		t.Fatalf("%d records and %d invalid lines of %d", len(set.Records), set.InvalidLines, len(file))
	}
}
