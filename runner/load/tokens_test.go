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

// limitedThirds is thirds with CountLimits, as tools/internal/tokenize has.
type limitedThirds struct {
	thirds
	text, token int64
}

func (l limitedThirds) CountLimits() (int64, int64) { return l.text, l.token }

// TestSessionTokenLedger: every turn of a 3-turn session, its body the whole history, is counted
// with the bound tokenizer and agrees with qualsim's usage (prompt and completion) on every turn,
// the prompt count growing with the history; qualsim's usage-off-by-one fault fails each turn
// with token_mismatch (the session ends at its first turn); a case whose last turn's history
// could exceed what the tokenizer counts is refused at plan time, and a reply over max_tokens
// of the vocabulary's longest token fails its turn (malformed_event) before the next is built.
func TestSessionTokenLedger(t *testing.T) {
	zero, frac := int64(0), 0.0
	tk := &contract.Tokenizer{Format: contract.TokenizerFormat, Path: "models/t.gguf", Digest: "sha256:" + strings.Repeat("ab", 32), Template: contract.TokenizerTemplateLines, MaxRequestDifference: &zero, MaxMismatchFraction: &frac}
	sessions := []Prompt{
		{ID: "session-apple", System: "You answer briefly.", Turns: []Turn{{"apple one two", 0}, {"banana three", 2}, {"cherry four five six", 1}}},
		{ID: "session-birch", Turns: []Turn{{"birch seven", 0}, {"cedar eight nine", 1}, {"dune ten", 0}}},
	}
	for i := range sessions {
		sessions[i].Text = sessions[i].Turns[0].Text
	}
	plan := func(t *testing.T, offByOne bool, tc TokenCounter) Plan {
		cfg := fastSim()
		cfg.Tokens = simThirds{}
		cfg.Faults.UsageOffByOne = offByOne
		c := sessionCase(2, nil)
		c.MaxTokens = 13
		c.Tokenizer = tk
		return Plan{CaseID: "session-ledger", Case: c, BaseURL: startSim(t, cfg), ModelID: "qualsim-tiny", Prompts: sessions, Seed: 3, Epoch: time.Now(), Tokens: tc}
	}
	t.Run("agree", func(t *testing.T) {
		res, err := Run(context.Background(), plan(t, false, thirds{}))
		if err != nil {
			t.Fatal(err)
		}
		row := res.Rows[0]
		by := sessionsOf(t, row.Records)
		for _, s := range sessions {
			rs := by[s.ID]
			if len(rs) != 3 {
				t.Fatalf("%s: %d turns recorded", s.ID, len(rs))
			}
			for k, r := range rs {
				checkRecordDoc(t, r)
				ct := r.ClientTokens
				if r.Error != nil || ct == nil || r.Usage == nil || ct.PromptTokens == 0 || ct.PromptTokens != r.Usage.PromptTokens || ct.CompletionTokens == nil || *ct.CompletionTokens != r.Usage.CompletionTokens {
					t.Fatalf("%s turn %d: error %+v, usage %+v, client %+v", s.ID, k, r.Error, r.Usage, ct)
				}
				if k > 0 && ct.PromptTokens <= rs[k-1].ClientTokens.PromptTokens+*rs[k-1].ClientTokens.CompletionTokens {
					t.Errorf("%s turn %d: client prompt %d does not hold turn %d's prompt %d and reply %d", s.ID, k, ct.PromptTokens, k-1, rs[k-1].ClientTokens.PromptTokens, *rs[k-1].ClientTokens.CompletionTokens)
				}
			}
		}
		if tr := row.Row.Tokens; tr == nil || tr.Compared != 6 || tr.Mismatched != 0 || tr.Exceeded != nil {
			t.Fatalf("row ledger %+v", tr)
		}
	})
	t.Run("off by one", func(t *testing.T) {
		res, err := Run(context.Background(), plan(t, true, thirds{}))
		if err != nil {
			t.Fatal(err)
		}
		row := res.Rows[0]
		for _, r := range row.Records {
			checkRecordDoc(t, r)
			if r.Error == nil || r.Error.Class != ClassTokenMismatch || !strings.Contains(r.Error.Message, "they differ by 1") {
				t.Fatalf("record %d: error %+v", r.Index, r.Error)
			}
		}
		if tr := row.Row.Tokens; tr == nil || tr.Compared != 2 || tr.Mismatched != 2 || tr.LargestCompletionDifference != 1 || tr.Exceeded == nil {
			t.Fatalf("row ledger %+v", tr)
		}
	})
	t.Run("history over the count limit", func(t *testing.T) {
		// apple's last turn: 19 + 13 + 12 + 20 bytes of text, two replies of 13 × 4, 6 messages × 16.
		p := plan(t, false, limitedThirds{text: 19 + 13 + 12 + 20 + 2*13*4 + 6*16 - 1, token: 4})
		if _, err := Run(context.Background(), p); !errors.Is(err, ErrPlan) || !strings.Contains(err.Error(), "session session-apple: its last turn's history could reach 264 bytes") {
			t.Fatalf("err %v", err)
		}
		p.Tokens = limitedThirds{text: 264, token: 4}
		res, err := Run(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		if row := res.Rows[0]; row.Row.Requests != 6 || row.Row.Failures != 0 {
			t.Fatalf("at the limit: %d requests, %d failures", row.Row.Requests, row.Row.Failures)
		}
	})
	t.Run("reply over the bound", func(t *testing.T) {
		// Longest token 1 byte: a reply may have 13 bytes; qualsim's replies are longer.
		res, err := Run(context.Background(), plan(t, false, limitedThirds{text: 1 << 20, token: 1}))
		if err != nil {
			t.Fatal(err)
		}
		row := res.Rows[0]
		if len(row.Records) != 2 {
			t.Fatalf("%d records, want each session's turn 0 only", len(row.Records))
		}
		for _, r := range row.Records {
			checkRecordDoc(t, r)
			if r.Error == nil || r.Error.Class != ClassMalformedEvent || !strings.Contains(r.Error.Message, "the next turn's history could not be counted") {
				t.Fatalf("record %d: error %+v", r.Index, r.Error)
			}
		}
	})
}
