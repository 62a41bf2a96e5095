package campaign

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/qualkit/qualkit/runner/artifact"
	"github.com/qualkit/qualkit/runner/load"
	"github.com/qualkit/qualkit/schemas/contract"
)

// tokenizerPin is a serving case's bound tokenizer, compared with its declared digest once
// preflight has hashed it.
type tokenizerPin struct {
	caseID string
	c      contract.Case
	file   artifact.File
	want   string
}

// resolveTokenizer binds a serving case's tokenizer file (repository-relative or absolute) as a
// tokenizer artifact.
func (p *Plan) resolveTokenizer(c contract.Case) error {
	tk := c.Tokenizer
	if tk == nil {
		return nil
	}
	abs := tk.Path
	if !filepath.IsAbs(abs) {
		if err := checkUnder(p.root, tk.Path); err != nil {
			return fmt.Errorf("%w: case %s tokenizer: %v", ErrWorkload, c.ID, err)
		}
		abs = filepath.Join(p.root, tk.Path)
	}
	f := artifact.File{Kind: contract.ArtifactKindTokenizer, Path: p.displayPath(abs), Abs: abs}
	if !slices.ContainsFunc(p.files, func(g artifact.File) bool { return g.Kind == f.Kind && g.Path == f.Path }) {
		p.files = append(p.files, f) // cases may share one tokenizer: it is bound once
	}
	p.tokenizers = append(p.tokenizers, tokenizerPin{caseID: c.ID, c: c, file: f, want: tk.Digest})
	return nil
}

// loadTokenizers checks each bound tokenizer's digest against its declaration and builds its
// counter.
func (p *Plan) loadTokenizers(ctx context.Context) error {
	if len(p.tokenizers) == 0 {
		return nil
	}
	digest := map[string]string{}
	for _, a := range p.artifacts {
		digest[string(a.Kind)+"\x00"+a.Path] = a.Digest
	}
	if p.cfg.LoadTokenizer == nil {
		return fmt.Errorf("%w: case %s binds a tokenizer, but this qualrun cannot count tokens", ErrWorkload, p.tokenizers[0].caseID)
	}
	p.counters = map[string]load.TokenCounter{}
	for _, pin := range p.tokenizers {
		p.cfg.progress("preflight", "loading tokenizer "+pin.file.Path, 0, 0)
		if got := digest[string(pin.file.Kind)+"\x00"+pin.file.Path]; got != pin.want {
			return fmt.Errorf("%w: case %s: tokenizer %s has digest %s, but the case binds %s (tampered, or the binding was not updated)", ErrArtifact, pin.caseID, pin.file.Path, got, pin.want)
		}
		tc, err := p.cfg.LoadTokenizer(pin.file.Abs)
		if err != nil {
			return fmt.Errorf("%w: case %s: %v", ErrArtifact, pin.caseID, err)
		}
		p.counters[pin.caseID] = tc
		// A synthetic corpus with prompt_tokens is generated to exact lengths with the counter.
		if co := pin.c.Corpus; co != nil && co.Source == contract.CorpusSourceSynthetic && co.PromptTokens != nil && co.Seed != nil {
			p.cfg.progress("preflight", "synthesising prompts: case "+pin.caseID, 0, int(co.Count))
			prompts, err := untilCancelled(ctx, func() ([]load.Prompt, error) {
				return load.SyntheticTokens(uint64(*co.Seed), int(co.Count), int(co.PromptTokens.Min), int(co.PromptTokens.Max), tc, pin.c.Tokenizer.Template)
			})
			if err != nil {
				return fmt.Errorf("%w: case %s corpus: %v", ErrWorkload, pin.caseID, err)
			}
			p.prompts[pin.caseID] = prompts
		}
		// A shared-prefix corpus with prefix_tokens and suffix_tokens is generated to exact lengths.
		if co := pin.c.Corpus; co != nil && co.Source == contract.CorpusSourceSharedPrefix && co.PrefixTokens != nil && co.SuffixTokens != nil && co.Seed != nil {
			p.cfg.progress("preflight", "synthesising prompts: case "+pin.caseID, 0, int(co.Groups*co.Suffixes))
			prompts, err := untilCancelled(ctx, func() ([]load.Prompt, error) {
				return load.SharedPrefixTokens(uint64(*co.Seed), int(co.Groups), int(*co.PrefixTokens), int(co.Suffixes), [2]int{int(co.SuffixTokens.Min), int(co.SuffixTokens.Max)}, tc, pin.c.Tokenizer.Template)
			})
			if err != nil {
				return fmt.Errorf("%w: case %s corpus: %v", ErrWorkload, pin.caseID, err)
			}
			p.prompts[pin.caseID] = prompts
		}
		// A trace of length_unit tokens is synthesised to its exact input lengths with it, once:
		// the plan keeps how each prompt was built and writes it again when its request is.
		if co := pin.c.Corpus; co != nil && co.Source == contract.CorpusSourceTrace && co.LengthUnit == contract.TraceCorpusLengthUnitTokens {
			tp, err := load.ResolveTokenTrace(ctx, *co, p.root, tc, pin.c.Tokenizer.Template, p.synthesisProgress(pin.caseID))
			if err != nil {
				return fmt.Errorf("%w: case %s corpus: %v", ErrWorkload, pin.caseID, err)
			}
			p.traces[pin.caseID] = tp
		}
	}
	return nil
}

// untilCancelled runs a synthesis that does not watch ctx and returns as soon as ctx is done, so
// a signal during preflight is honoured at once; the abandoned synthesis only computes, and the
// process exits after preflight refuses (nothing was launched or written).
func untilCancelled(ctx context.Context, synth func() ([]load.Prompt, error)) ([]load.Prompt, error) {
	type result struct {
		prompts []load.Prompt
		err     error
	}
	done := make(chan result, 1)
	go func() {
		ps, err := synth()
		done <- result{ps, err}
	}()
	select {
	case r := <-done:
		return r.prompts, r.err
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

// tokenLedgerExceeded describes the rows whose token ledger broke the declared
// max_mismatch_fraction (up to four named; "" when none): such a row fails its case
// (docs/tokens.md).
func tokenLedgerExceeded(rows []contract.Row) string {
	return describeRows(rows, "break the token ledger's max_mismatch_fraction", func(row contract.Row) *string {
		if row.Tokens == nil {
			return nil
		}
		return row.Tokens.Exceeded
	})
}
