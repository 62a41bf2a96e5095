package check

import (
	"crypto/sha256"
	"testing"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/wire"
	"github.com/qualkit/qualkit/verify/internal/finding"
	"github.com/qualkit/qualkit/verify/internal/record"
)

// FuzzBodySplit: the body a prompt's records share, split around its seed and hashed with each
// record's own seed (checkAll), is the body wire.Body renders for that record, whatever the text,
// the system message, the sampling seed and a tools file that holds the seed member itself: a
// record whose body_digest is wire.Body's is never a finding, and one whose digest differs always
// is, naming that record alone.
func FuzzBodySplit(f *testing.F) {
	f.Add("Say hello.", "", int64(1234), int64(3), false, false)
	f.Add(`a "seed":9007199254740991 b`, "You are terse.", int64(9007199254740990), int64(5), true, true)
	f.Add("x\\\"seed\\\":1", "", int64(0), int64(9007199254740991), false, true)
	f.Fuzz(func(t *testing.T, text, system string, sampling, first int64, tools, completions bool) {
		if sampling < 0 || first < 0 || first > 1<<40 {
			t.Skip()
		}
		wc := &contract.Case{API: contract.ServingCaseAPIChat, Stream: true, MaxTokens: 8, Sampling: &contract.Sampling{Seed: &sampling}}
		if completions {
			wc.API = contract.ServingCaseAPICompletions
		}
		var offer *wire.Tools
		if tools {
			var err error
			if offer, err = wire.OfferTools([]byte(`[{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {"seed": {"const": 0}}, "seed":9007199254740991}}}]`), contract.Tools{Choice: contract.ToolsChoiceAuto}); err != nil {
				t.Fatal(err)
			}
		}
		p := wire.Prompt{ID: "p-one", Text: text, System: system}
		cr := &contract.CaseResultDoc{Rows: []contract.Row{{Concurrency: 1, Records: contract.FileRef{Path: "rows.jsonl"}}}}
		var refs []bodyRef
		for k := range int64(4) {
			r := &record.Record{Line: int(k), Index: first + k, PromptID: p.ID}
			body, err := wire.Body(wc, "m", p, wire.RequestSeed(wc.Sampling, r.Index), offer)
			if err != nil {
				t.Skip() // text the encoder refuses is no body a runner sent
			}
			r.BodyDigest = sha256.Sum256(body)
			refs = append(refs, bodyRef{rec: r})
		}
		c := &finding.Collector{}
		bc := &bodyCheck{c: c, cr: cr, wc: wc, model: "m", tools: offer, nonces: map[int][]string{}}
		bc.checkAll(refs, p)
		if len(c.Out) != 0 {
			t.Fatalf("honest bodies are findings: %v", c.Out)
		}
		refs[2].rec.BodyDigest[0] ^= 1
		bc.checkAll(refs, p)
		if len(c.Out) != 1 || c.Out[0].Pointer != "/2/body_digest" {
			t.Fatalf("one edited body_digest: %v", c.Out)
		}
	})
}
