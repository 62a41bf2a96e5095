package load

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/evidence"
	"github.com/qualkit/qualkit/schemas/jsonstrict"
	"github.com/qualkit/qualkit/schemas/synth"
)

// Prompt is one resolved corpus prompt.
type Prompt struct {
	ID, Text, System string
	// MaxTokens, when positive, is this prompt's max_tokens (a trace entry's output_length) in
	// place of the case's; AtNs is a trace entry's scheduled offset from the row's start.
	MaxTokens, AtNs int64
	// Turns are a session corpus's user turns (Text is turn 0's); nil otherwise (session.go).
	Turns []Turn
}

// ErrCorpus marks a corpus that cannot be resolved.
var ErrCorpus = errors.New("invalid corpus")

var portableID = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{2,127}$`)

// Resolve turns a serving case's corpus into prompts in declared order:
//
//   - inline: the prompts as written;
//   - file: repoRoot/path, whose sha256 digest must equal corpus.digest, read as JSONL: one
//     strict JSON object {"id": ..., "text": ..., "system"?: ...} per line (no unknown or
//     duplicate keys; no blank line except after the last), ids unique;
//   - synthetic: SyntheticWords(seed, count, min, max).
//
// Errors wrap ErrCorpus and name the file, line or field.
func Resolve(corpus contract.Corpus, repoRoot string) ([]Prompt, error) {
	var out []Prompt
	switch corpus.Source {
	case contract.CorpusSourceInline:
		for _, p := range corpus.Prompts {
			out = append(out, Prompt{ID: p.ID, Text: p.Text, System: p.System})
		}
	case contract.CorpusSourceFile:
		var err error
		if out, err = readCorpusFile(corpus, repoRoot); err != nil {
			return nil, err
		}
	case contract.CorpusSourceSynthetic:
		seed, count, minWords, maxWords, err := synth.CheckSynthetic(corpus)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrCorpus, err)
		}
		out = SyntheticWords(seed, count, minWords, maxWords)
	case contract.CorpusSourceTrace:
		var err error
		if out, err = readTraceCorpus(corpus, repoRoot); err != nil {
			return nil, err
		}
	case contract.CorpusSourceConversations, contract.CorpusSourceSyntheticConversations:
		var err error
		if out, err = resolveSessions(corpus, repoRoot); err != nil {
			return nil, err
		}
	case contract.CorpusSourceSharedPrefix:
		var err error
		if out, err = resolveSharedPrefix(corpus); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("%w: source %q: want inline, file, synthetic, trace, conversations, synthetic_conversations or shared_prefix", ErrCorpus, corpus.Source)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no prompts", ErrCorpus)
	}
	seen := make(map[string]int, len(out))
	for i, p := range out {
		if err := checkPrompt(p); err != nil {
			return nil, fmt.Errorf("%w: prompt %d: %v", ErrCorpus, i, err)
		}
		if j, dup := seen[p.ID]; dup {
			return nil, fmt.Errorf("%w: prompt %d: id %q repeats prompt %d", ErrCorpus, i, p.ID, j)
		}
		seen[p.ID] = i
	}
	return out, nil
}

func checkPrompt(p Prompt) error {
	switch {
	case !portableID.MatchString(p.ID):
		return fmt.Errorf("id %q is not a portable id (%s)", clip(p.ID, 64), portableID)
	case p.Text == "":
		return fmt.Errorf("id %q: empty text", p.ID)
	case len(p.Text) > MaxPromptBytes || len(p.System) > MaxPromptBytes:
		return fmt.Errorf("id %q: text or system longer than %d bytes", p.ID, MaxPromptBytes)
	case !utf8.ValidString(p.Text) || !utf8.ValidString(p.System):
		return fmt.Errorf("id %q: text or system is not UTF-8", p.ID)
	}
	return nil
}

type filePrompt struct {
	ID     *string `json:"id"`
	Text   *string `json:"text"`
	System *string `json:"system"`
}

func readCorpusFile(corpus contract.Corpus, repoRoot string) ([]Prompt, error) {
	rel := corpus.Path
	if rel == "" || strings.Contains(rel, `\`) || !filepath.IsLocal(filepath.FromSlash(rel)) {
		return nil, fmt.Errorf("%w: path %q: want a repository-relative path that stays inside the repository", ErrCorpus, rel)
	}
	path := filepath.Join(repoRoot, filepath.FromSlash(rel))
	data, err := evidence.ReadFileLimited(path, MaxCorpusBytes)
	if err != nil {
		return nil, fmt.Errorf("%w: read %s: %w", ErrCorpus, rel, err)
	}
	if got := evidence.DigestOf(data); got != corpus.Digest {
		return nil, fmt.Errorf("%w: %s has digest %s, the workload declares %s", ErrCorpus, rel, got, corpus.Digest)
	}
	lines := bytes.Split(data, []byte{'\n'})
	if len(lines) > 0 && len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1]
	}
	if len(lines) > MaxCorpusPrompts {
		return nil, fmt.Errorf("%w: %s has more than %d prompts", ErrCorpus, rel, MaxCorpusPrompts)
	}
	out := make([]Prompt, 0, len(lines))
	for i, line := range lines {
		var fp filePrompt
		if len(bytes.TrimSpace(line)) == 0 {
			return nil, fmt.Errorf("%w: %s line %d: blank line", ErrCorpus, rel, i+1)
		}
		if err := jsonstrict.DecodeInto(line, &fp); err != nil {
			return nil, fmt.Errorf("%w: %s line %d: %v", ErrCorpus, rel, i+1, err)
		}
		if fp.ID == nil || fp.Text == nil {
			return nil, fmt.Errorf("%w: %s line %d: want {\"id\": ..., \"text\": ...}", ErrCorpus, rel, i+1)
		}
		p := Prompt{ID: *fp.ID, Text: *fp.Text}
		if fp.System != nil {
			if *fp.System == "" {
				return nil, fmt.Errorf("%w: %s line %d: empty system", ErrCorpus, rel, i+1)
			}
			p.System = *fp.System
		}
		out = append(out, p)
	}
	return out, nil
}

// syntheticWords is the vocabulary of qualkit.synthetic-words.v1 (synth.Words).
var syntheticWords = synth.Words

// SyntheticWords is the generator qualkit.synthetic-words.v1 (synth.SyntheticWords), every prompt
// held.
func SyntheticWords(seed uint64, count, minWords, maxWords int) []Prompt {
	out := make([]Prompt, 0, count)
	for _, p := range synth.SyntheticWords(seed, count, minWords, maxWords) {
		out = append(out, Prompt{ID: p.ID, Text: p.Text})
	}
	return out
}

// warmupPrompts returns the warmup prompts of a row (synth.Warmups over the corpus's shapes: each
// prompt's system message and synth.TextFields of its text).
func warmupPrompts(corpus []Prompt, n int, seed int64, concurrency, repetition int64) []Prompt {
	return warmupShaped(len(corpus), func(i int) (string, int) { return corpus[i].System, synth.TextFields(corpus[i].Text) }, n, seed, concurrency, repetition)
}

// warmupShaped is warmupPrompts over a corpus of size prompts given by shape: prompt i's system
// message and the space-separated fields of its text (synth.Warmups).
func warmupShaped(size int, shape func(i int) (system string, fields int), n int, seed int64, concurrency, repetition int64) []Prompt {
	ws := synth.Warmups(size, shape, n, seed, concurrency, repetition)
	out := make([]Prompt, len(ws))
	for i, w := range ws {
		out[i] = Prompt{ID: w.ID, Text: w.Text, System: w.System}
	}
	return out
}
