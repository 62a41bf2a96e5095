package verify

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qualkit/qualkit/verify/internal/record"
)

// TestRowLedgerRecomputed: qualverify recomputes a row's token ledger (docs/tokens.md) from the
// request records of resealed frozen evidence: a ledger without a bound tokenizer, a bound
// tokenizer without a ledger or without client counts, a ledger the records contradict, and a
// request that broke max_request_difference but succeeded are each a row_mismatch; a passed
// result whose row breaks max_mismatch_fraction is a verdict_mismatch.
func TestRowLedgerRecomputed(t *testing.T) {
	const receipt = ".qualification/receipts/a-1.json"
	const caseDir = "cases/000-chat-stream-r000"
	setTokens := func(t *testing.T, root, run string, tokens map[string]any) {
		p := filepath.Join(root, run, caseDir, "case-result.json")
		cr := readTree(t, p)
		cr["rows"].([]any)[0].(map[string]any)["tokens"] = tokens
		writeTree(t, p, cr)
	}
	bind := func(t *testing.T, root string, extra map[string]any) {
		wp := filepath.Join(root, "workloads/frozen.json")
		w := readTree(t, wp)
		for _, v := range w["variants"].([]any) {
			for _, c := range v.(map[string]any)["cases"].([]any) {
				if cm := c.(map[string]any); cm["id"] == "chat-stream" {
					tk := map[string]any{"format": "gguf", "path": "models/tiny.gguf", "digest": "sha256:" + strings.Repeat("ab", 32), "template": "lines"}
					for k, x := range extra {
						tk[k] = x
					}
					cm["tokenizer"] = tk
				}
			}
		}
		writeTree(t, wp, w)
	}
	// count sets every record's client_tokens to its usage, the completion off by completionOff.
	count := func(t *testing.T, root, run string, completionOff int64) int {
		p := filepath.Join(root, run, caseDir, "rows/c0001-r000.jsonl")
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		measured := 0
		for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
			var rec map[string]any
			d := json.NewDecoder(bytes.NewReader(line))
			d.UseNumber()
			if err := d.Decode(&rec); err != nil {
				t.Fatal(err)
			}
			if u, ok := rec["usage"].(map[string]any); ok {
				n, _ := u["completion_tokens"].(json.Number).Int64()
				rec["client_tokens"] = map[string]any{"prompt_tokens": u["prompt_tokens"], "completion_tokens": n - completionOff}
				if rec["warmup"] == false {
					measured++
				}
			}
			enc, err := json.Marshal(rec)
			if err != nil {
				t.Fatal(err)
			}
			out.Write(enc)
			out.WriteByte('\n')
		}
		mustWrite(t, p, out.Bytes())
		return measured
	}
	ledger := func(n, mismatched int, completion int) map[string]any {
		frac := json.Number("0")
		if mismatched > 0 {
			frac = json.Number(record.FmtFloat(float64(mismatched) / float64(n)))
		}
		return map[string]any{"compared": json.Number(record.FmtFloat(float64(n))), "mismatched": json.Number(record.FmtFloat(float64(mismatched))), "mismatch_fraction": frac,
			"largest_prompt_difference": json.Number("0"), "largest_completion_difference": json.Number(record.FmtFloat(float64(completion))), "exceeded": nil}
	}
	for _, tc := range []struct {
		name   string
		tamper func(t *testing.T, root, run string)
		err    error
		also   string
	}{
		{"ledger without a tokenizer", func(t *testing.T, root, run string) {
			setTokens(t, root, run, ledger(4, 0, 0))
		}, ErrRowMismatch, "has a token ledger, but its case binds no tokenizer"},
		{"tokenizer without a ledger", func(t *testing.T, root, run string) {
			bind(t, root, nil)
		}, ErrRowMismatch, "has no token ledger"},
		{"tokenizer without client counts", func(t *testing.T, root, run string) {
			bind(t, root, nil)
			setTokens(t, root, run, ledger(0, 0, 0))
		}, ErrRowMismatch, "has no client_tokens"},
		{"a ledger the records contradict", func(t *testing.T, root, run string) {
			bind(t, root, nil)
			n := count(t, root, run, 0)
			setTokens(t, root, run, ledger(n, 1, 0))
		}, ErrRowMismatch, "the records say"},
		{"a success over max_request_difference", func(t *testing.T, root, run string) {
			bind(t, root, map[string]any{"max_request_difference": json.Number("0")})
			n := count(t, root, run, 1)
			setTokens(t, root, run, ledger(n, n, 1))
		}, ErrRowMismatch, "succeeded, but server completion_tokens"},
		{"a passed result over max_mismatch_fraction", func(t *testing.T, root, run string) {
			bind(t, root, map[string]any{"max_mismatch_fraction": json.Number("0.5")})
			n := count(t, root, run, 1)
			l := ledger(n, n, 1)
			l["exceeded"] = "over"
			setTokens(t, root, run, l)
		}, ErrVerdictMismatch, "a passed result's row breaks its token ledger"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := copyTree(t, frozenRoot)
			k := newTestKey(t)
			tc.tamper(t, root, runDirOf(t, root, receipt))
			reseal(t, root, receipt, k)
			res := verifyAt(t, root, receipt, k.policy())
			if res.Verdict != Rejected {
				t.Fatal("tampered evidence verified")
			}
			for _, f := range res.Check(CheckTolerances).Findings {
				if errors.Is(f, tc.err) && strings.Contains(f.Error(), tc.also) {
					return
				}
			}
			t.Fatalf("no %v finding mentioning %q; findings:%s", tc.err, tc.also, findingsOf(res))
		})
	}
}
