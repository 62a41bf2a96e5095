package load

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/qualkit/qualkit/schemas/contract"
)

// thirds is a test tokenizer: a text is one token per started 3 bytes; a prompt renders as the
// lines template does and gains one BOS token. qualsim takes it through simThirds.
type thirds struct{}

func (thirds) TextTokens(s string) (int64, error) { return int64((len(s) + 2) / 3), nil }

func (thirds) PromptTokens(template contract.TokenizerTemplate, roles, contents []string) (int64, error) {
	var b strings.Builder
	for i := range contents {
		if i > 0 {
			b.WriteByte('\n')
		}
		if roles[i] != "user" {
			b.WriteString(roles[i] + ": ")
		}
		b.WriteString(contents[i])
	}
	n, _ := thirds{}.TextTokens(b.String())
	return n + 1, nil
}

type simThirds struct{ thirds }

func (s simThirds) PromptTokens(roles, contents []string) (int64, error) {
	return s.thirds.PromptTokens(contract.TokenizerTemplateLines, roles, contents)
}

// TestRunTokenLedger: with a bound tokenizer every record carries the client's counts; against a
// server counting with the same tokenizer they equal its usage and the row's ledger is clean;
// qualsim's usage-off-by-one fault fails each measured request with token_mismatch under
// max_request_difference 0 and breaks the row's max_mismatch_fraction; a plan without a counter
// is refused.
func TestRunTokenLedger(t *testing.T) {
	zero, frac := int64(0), 0.0
	tk := &contract.Tokenizer{Format: contract.TokenizerFormat, Path: "models/t.gguf", Digest: "sha256:" + strings.Repeat("ab", 32), Template: contract.TokenizerTemplateLines, MaxRequestDifference: &zero, MaxMismatchFraction: &frac}
	run := func(t *testing.T, offByOne bool) RowResult {
		cfg := fastSim()
		cfg.Tokens = simThirds{}
		cfg.Faults.UsageOffByOne = offByOne
		url := startSim(t, cfg)
		c := servingCase([]int64{2}, 1, 1, 13) // 13: six of qualsim's 6-byte tokens (12) fit, off by one stays within max_tokens
		c.Tokenizer = tk
		c.OutputAssertions = nil // qualsim stops at the tokens that fit, short of max_tokens
		plan := Plan{CaseID: "ledger", Case: c, BaseURL: url, ModelID: "qualsim-tiny", Prompts: inlinePrompts(), Seed: 1, Epoch: time.Now(), Tokens: thirds{}}
		res, err := Run(context.Background(), plan)
		if err != nil {
			t.Fatal(err)
		}
		return res.Rows[0]
	}
	t.Run("agree", func(t *testing.T) {
		row := run(t, false)
		for _, r := range row.Records {
			checkRecordDoc(t, r)
			ct := r.ClientTokens
			if r.Error != nil || ct == nil || r.Usage == nil || ct.PromptTokens != r.Usage.PromptTokens || ct.CompletionTokens == nil || *ct.CompletionTokens != r.Usage.CompletionTokens {
				t.Fatalf("record %d: error %+v, usage %+v, client %+v", r.Index, r.Error, r.Usage, ct)
			}
		}
		if tr := row.Row.Tokens; tr == nil || tr.Compared != row.Row.Requests || tr.Mismatched != 0 || tr.Exceeded != nil {
			t.Fatalf("row ledger %+v", tr)
		}
	})
	t.Run("off by one", func(t *testing.T) {
		row := run(t, true)
		for _, r := range row.Records {
			checkRecordDoc(t, r)
			if r.Warmup {
				continue
			}
			if r.Error == nil || r.Error.Class != ClassTokenMismatch || !strings.Contains(r.Error.Message, "they differ by 1") {
				t.Fatalf("record %d: error %+v", r.Index, r.Error)
			}
		}
		tr := row.Row.Tokens
		if tr == nil || tr.Mismatched != row.Row.Requests || tr.LargestCompletionDifference != 1 || tr.LargestPromptDifference != 0 || tr.Exceeded == nil {
			t.Fatalf("row ledger %+v", tr)
		}
		if value(row.Row.Metrics, "request_failures.token_mismatch") != float64(row.Row.Requests) {
			t.Fatalf("request_failures.token_mismatch = %v", value(row.Row.Metrics, "request_failures.token_mismatch"))
		}
	})
	t.Run("no counter", func(t *testing.T) {
		c := servingCase([]int64{1}, 1, 0, 4)
		c.Tokenizer = tk
		_, err := Run(context.Background(), Plan{CaseID: "ledger", Case: c, BaseURL: "http://127.0.0.1:1", ModelID: "m", Prompts: inlinePrompts(), Seed: 1, Epoch: time.Now()})
		if !errors.Is(err, ErrPlan) {
			t.Fatalf("err %v, want ErrPlan", err)
		}
	})
}
