package load

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/metric"
)

// TokenCounter counts tokens with a case's bound tokenizer, for the client-side token ledger
// (docs/tokens.md); qualrun builds one from the tokenizer file. It must be safe for concurrent
// use.
type TokenCounter interface {
	// PromptTokens counts a prompt, given as its messages' roles and contents in order (a
	// completions prompt is one user message), as template renders it.
	PromptTokens(template contract.TokenizerTemplate, roles, contents []string) (int64, error)
	// TextTokens counts a completion's text.
	TextTokens(text string) (int64, error)
}

// promptTokens counts the prompt of a request body as it was sent (so a cold row's nonce is
// counted): its messages, or its prompt as one user message, or a Responses API body's
// instructions (a system message) and input.
func promptTokens(tc TokenCounter, template contract.TokenizerTemplate, body []byte) (int64, error) {
	var w struct {
		Messages     []wireMessage `json:"messages"`
		Prompt       *string       `json:"prompt"`
		Instructions *string       `json:"instructions"`
		Input        []wireMessage `json:"input"`
	}
	if err := json.Unmarshal(body, &w); err != nil {
		return 0, err
	}
	var roles, contents []string
	switch {
	case w.Prompt != nil:
		roles, contents = []string{"user"}, []string{*w.Prompt}
	case len(w.Messages) > 0:
		for _, m := range w.Messages {
			roles, contents = append(roles, m.Role), append(contents, m.Content)
		}
	case len(w.Input) > 0:
		if w.Instructions != nil {
			roles, contents = []string{"system"}, []string{*w.Instructions}
		}
		for _, m := range w.Input {
			roles, contents = append(roles, m.Role), append(contents, m.Content)
		}
	default:
		return 0, errors.New("the body has neither messages, a prompt nor an input")
	}
	return tc.PromptTokens(template, roles, contents)
}

// ledger records the client's counts beside the server's usage: the prompt as sent (counted when
// the row was planned) and the completion text of a complete response, counted here, on the
// request's goroutine after its stream closed. A measured request without another error whose
// counts differ from its usage by more than the declared max_request_difference fails with class
// token_mismatch.
func (r *runner) ledger(rec *contract.RequestRecordDoc, q *request, resp *Response) {
	ct := &contract.ClientTokens{PromptTokens: q.promptTokens}
	if im := r.plan.Case.Images; im != nil {
		n := im.Count
		ct.ImagesNotCounted = &n
	}
	if resp.Complete {
		n, err := r.plan.Tokens.TextTokens(string(resp.Text))
		if err == nil {
			ct.CompletionTokens = &n
		}
		if len(resp.Reasoning) > 0 {
			if n, err := r.plan.Tokens.TextTokens(string(resp.Reasoning)); err == nil {
				ct.ReasoningTokens = &n
			}
		}
	}
	rec.ClientTokens = ct
	if q.warmup || rec.Error != nil || rec.Usage == nil {
		return
	}
	if msg := metric.RequestTokenMismatch(*rec.Usage, *ct, r.plan.Case.Tokenizer.MaxRequestDifference); msg != "" {
		rec.Error = reqError(ClassTokenMismatch, "%s", msg)
	}
}

// SyntheticTokens generates a synthetic corpus whose prompts are each exactly a seeded number of
// tokens as tc counts them with template (docs/tokens.md): prompt i targets T_i = min +
// r mod (max - min + 1), r drawn from a SplitMix64 stream seeded with seed ^ 0x51544F4B454E5331;
// its text is the same stream's words (as SyntheticWords draws them), as many as keep the count
// at most T_i, then the next word's characters one by one (its leading space first) until the
// count is T_i. A character that would jump past T_i is skipped for the next one of the word,
// then of the fallback alphabet a-z; a prompt that still cannot reach T_i exactly is an error
// naming it. Ids are those of SyntheticWords.
func SyntheticTokens(seed uint64, count, minTokens, maxTokens int, tc TokenCounter, template contract.TokenizerTemplate) ([]Prompt, error) {
	if count < 1 || minTokens < 1 || maxTokens < minTokens {
		return nil, fmt.Errorf("%w: synthetic prompt_tokens: want 1 <= min <= max and a count of at least 1", ErrCorpus)
	}
	rng := metric.SplitMix64{State: seed ^ 0x51544F4B454E5331}
	countText := func(text string) (int64, error) {
		return tc.PromptTokens(template, []string{"user"}, []string{text})
	}
	out := make([]Prompt, count)
	for i := range count {
		target := int64(minTokens + int(rng.Next()%uint64(maxTokens-minTokens+1)))
		text, err := exactText(&rng, target, countText)
		if err != nil {
			return nil, fmt.Errorf("%w: synthetic prompt %d (%d tokens): %v", ErrCorpus, i, target, err)
		}
		out[i] = Prompt{ID: fmt.Sprintf("synthetic-%06d", i), Text: text}
	}
	return out, nil
}

// exactText builds one prompt of exactly target tokens (see SyntheticTokens): exactRecipe's
// text.
func exactText(rng *metric.SplitMix64, target int64, count func(string) (int64, error)) (string, error) {
	text, _, err := exactRecipe(rng, target, count, nil)
	return text, err
}

// wordEstimates shares exactRecipe's word estimates between its calls with the same count (a
// pure function of the text: a trace's blocks are each counted as bare text), so that they are
// counted once, not once per call. Safe for concurrent use.
type wordEstimates struct {
	mu   sync.Mutex
	base int64 // count("the"), -1 until counted
	est  map[string]int64
}

func newWordEstimates() *wordEstimates { return &wordEstimates{base: -1, est: map[string]int64{}} }

// get is the memo's value for key, if any; put stores it.
func (m *wordEstimates) get(key string) (int64, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if key == "" {
		return m.base, m.base >= 0
	}
	k, ok := m.est[key]
	return k, ok
}

func (m *wordEstimates) put(key string, v int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if key == "" {
		m.base = v
		return
	}
	m.est[key] = v
}

// textRecipe is how exactRecipe built a text from its word stream, so that the text can be
// written again from the stream's seed without counting (textRecipe.write): of the first drawn
// words the first kept, then the next more words, each after a space but the text's first, then
// tail (the characters added one by one).
type textRecipe struct {
	drawn, kept, more int32
	tail              string
}

// appendTo appends the recipe's text to b, drawing from rng (the stream exactRecipe drew from,
// in the state it started in).
func (r textRecipe) appendTo(b []byte, rng metric.SplitMix64) []byte {
	written := 0
	for k := range r.drawn + r.more {
		w := rng.Next() % uint64(len(syntheticWords))
		switch {
		case k >= r.kept && k < r.drawn: // dropped
			continue
		case written > 0:
			b = append(b, spacedWords[w]...)
		default:
			b = append(b, syntheticWords[w]...)
		}
		written++
	}
	return append(b, r.tail...)
}

// exactRecipe builds one prompt of exactly target tokens (see SyntheticTokens) and says how
// (textRecipe). Whole words are first appended on an estimate (the sum of what each word adds
// to a text), up to estimateMargin tokens short of the target, and counted once; words are
// dropped from the end while that count is over the target, then appended one at a time with an
// exact count each, so that a long prompt costs a few counts of its text, not one per word.
// shared, when not nil, holds the estimates of earlier calls with the same count.
func exactRecipe(rng *metric.SplitMix64, target int64, count func(string) (int64, error), shared *wordEstimates) (string, textRecipe, error) {
	const estimateMargin = 16
	var words []string
	var r textRecipe
	join := func(extra string) string { return strings.Join(words, "") + extra }
	if shared == nil {
		shared = newWordEstimates()
	}
	draw := func() string {
		w := syntheticWords[rng.Next()%uint64(len(syntheticWords))]
		if len(words) > 0 {
			w = " " + w
		}
		return w
	}
	// A word's estimate is what it adds after a word: count("the"+w) - count("the") (the BOS and
	// space prefix a template adds cancel out).
	base, ok := shared.get("")
	if !ok {
		var err error
		if base, err = count("the"); err != nil {
			return "", r, err
		}
		shared.put("", base)
	}
	est := base
	for est < target-estimateMargin {
		w := draw()
		k, ok := shared.get(w)
		if !ok {
			c, err := count("the" + w)
			if err != nil {
				return "", r, err
			}
			k = max(c-base, 1)
			shared.put(w, k)
		}
		words, est = append(words, w), est+k
	}
	r.drawn = int32(len(words))
	n, err := count(join(""))
	if err != nil {
		return "", r, err
	}
	for n > target && len(words) > 0 {
		words = words[:len(words)-1]
		if n, err = count(join("")); err != nil {
			return "", r, err
		}
	}
	r.kept = int32(len(words))
	var next string
	for n < target {
		w := draw()
		c, err := count(join(w))
		if err != nil {
			return "", r, err
		}
		if c > target {
			next = w
			break
		}
		words, n = append(words, w), c
	}
	r.more = int32(len(words)) - r.kept
	text := join("")
	if n == target {
		return text, r, nil
	}
	if next == "" {
		next = " "
	}
	whole := len(text)
	for _, c := range next + "abcdefghijklmnopqrstuvwxyz" {
		if text == "" && c == ' ' {
			continue
		}
		k, err := count(text + string(c))
		if err != nil {
			return "", r, err
		}
		if k > target {
			continue
		}
		text, n = text+string(c), k
		if n == target {
			r.tail = strings.Clone(text[whole:]) // a recipe outlives its text
			return text, r, nil
		}
	}
	return "", r, fmt.Errorf("no text of the generator's words and a-z counts exactly %d (reached %d)", target, n)
}
