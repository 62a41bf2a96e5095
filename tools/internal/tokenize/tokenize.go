package tokenize

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"

	"github.com/ollama/ollama/tokenizer"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/tools/internal/gguf"
)

// ErrVocabulary marks a tokenizer file whose vocabulary cannot be used.
var ErrVocabulary = errors.New("unusable tokenizer vocabulary")

// Tokenizer counts tokens with one vocabulary. It is safe for concurrent use.
type Tokenizer struct {
	// special finds the special tokens and merge counts the text between them, as ollama's
	// SentencePiece.Encode encodes a text, in time linear in its length.
	special *specials
	merge   *merger
	// addBOS: the vocabulary asks for a BOS token in front of every prompt.
	addBOS bool
	// spacePrefix: a prompt is encoded with a space in front (llama.cpp's add_space_prefix,
	// true for a SentencePiece vocabulary unless the file says false).
	spacePrefix bool
	// Size is the number of tokens of the vocabulary.
	Size int
}

// LoadFile opens a GGUF file (a regular file, not a symbolic link) and loads its vocabulary.
func LoadFile(path string) (*Tokenizer, error) {
	// One open that neither follows a final symlink nor blocks on a FIFO, then the check on what
	// was opened: no window between the check and the open for the path to be swapped.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, syscall.ELOOP) {
		return nil, fmt.Errorf("tokenizer %s: not a regular file (a symlink)", path)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("tokenizer %s: not a regular file (%s)", path, fi.Mode().Type())
	}
	t, err := Load(f)
	if err != nil {
		return nil, fmt.Errorf("tokenizer %s: %w", path, err)
	}
	return t, nil
}

// Load reads a GGUF file's header from r and builds the tokenizer of its embedded vocabulary.
func Load(r io.Reader) (*Tokenizer, error) {
	h, err := gguf.Read(io.LimitReader(r, MaxFileBytes))
	if err != nil {
		return nil, err
	}
	str := func(key string) (string, bool) { v, ok := h.Lookup(key); s, isStr := v.(string); return s, ok && isStr }
	if model, ok := str("tokenizer.ggml.model"); !ok || model != "llama" {
		return nil, fmt.Errorf("%w: tokenizer.ggml.model is %q; only \"llama\" (SentencePiece) is supported", ErrVocabulary, model)
	}
	v, _ := h.Lookup("tokenizer.ggml.tokens")
	tokens, ok := v.([]string)
	if !ok {
		return nil, fmt.Errorf("%w: tokenizer.ggml.tokens must be an array of strings, got %s", ErrVocabulary, describe(v))
	}
	v, _ = h.Lookup("tokenizer.ggml.scores")
	scores, ok := v.([]float32)
	if !ok {
		return nil, fmt.Errorf("%w: tokenizer.ggml.scores must be %d float32 values", ErrVocabulary, len(tokens))
	}
	v, _ = h.Lookup("tokenizer.ggml.token_type")
	types, ok := v.([]int32)
	if !ok {
		return nil, fmt.Errorf("%w: tokenizer.ggml.token_type must be %d int32 values", ErrVocabulary, len(tokens))
	}
	if v, ok := h.Lookup("tokenizer.ggml.merges"); ok {
		if merges, isStr := v.([]string); !isStr || len(merges) > MaxMerges {
			return nil, fmt.Errorf("%w: tokenizer.ggml.merges must be at most MaxMerges %d strings, got %s", ErrVocabulary, MaxMerges, describe(v))
		}
	}
	t, err := fromVocabulary(tokens, scores, types)
	if err != nil {
		return nil, err
	}
	if b, ok := h.Lookup("tokenizer.ggml.add_space_prefix"); ok {
		bv, isBool := b.(bool)
		if !isBool {
			return nil, fmt.Errorf("%w: tokenizer.ggml.add_space_prefix is not a bool", ErrVocabulary)
		}
		t.spacePrefix = bv
	}
	if b, ok := h.Lookup("tokenizer.ggml.add_bos_token"); ok {
		bv, isBool := b.(bool)
		if !isBool {
			return nil, fmt.Errorf("%w: tokenizer.ggml.add_bos_token is not a bool", ErrVocabulary)
		}
		t.addBOS = bv
	}
	if t.addBOS {
		id, ok := uintValue(h, "tokenizer.ggml.bos_token_id")
		if !ok || id >= uint64(len(tokens)) {
			return nil, fmt.Errorf("%w: add_bos_token without a bos_token_id in the vocabulary", ErrVocabulary)
		}
	}
	return t, nil
}

// fromVocabulary checks a vocabulary against the limits and builds its tokenizer (no BOS; a
// space prefix).
func fromVocabulary(tokens []string, scores []float32, types []int32) (*Tokenizer, error) {
	switch {
	case len(tokens) < 5:
		return nil, fmt.Errorf("%w: tokenizer.ggml.tokens must be at least 5 strings, got %d", ErrVocabulary, len(tokens))
	case len(tokens) > MaxVocabulary:
		return nil, fmt.Errorf("%w: tokenizer.ggml.tokens has %d strings, over MaxVocabulary %d", ErrVocabulary, len(tokens), MaxVocabulary)
	}
	if len(scores) != len(tokens) {
		return nil, fmt.Errorf("%w: tokenizer.ggml.scores must be %d float32 values", ErrVocabulary, len(tokens))
	}
	if len(types) != len(tokens) {
		return nil, fmt.Errorf("%w: tokenizer.ggml.token_type must be %d int32 values", ErrVocabulary, len(tokens))
	}
	special, err := checkTokens(tokens, types)
	if err != nil {
		return nil, err
	}
	return &Tokenizer{
		Size:        len(tokens),
		spacePrefix: true,
		special:     newSpecials(special),
		merge:       newMerger(tokens, scores),
	}, nil
}

func isSpecial(typ int32) bool {
	return typ == tokenizer.TOKEN_TYPE_CONTROL || typ == tokenizer.TOKEN_TYPE_USER_DEFINED
}

// checkTokens checks every token against the limits and returns the special tokens in
// vocabulary order: ollama's are the control and user-defined ones
// (Vocabulary.SpecialVocabulary).
func checkTokens(tokens []string, types []int32) ([]string, error) {
	var special []string
	for i, tok := range tokens {
		if len(tok) > MaxTokenBytes {
			return nil, fmt.Errorf("%w: token %d is %d bytes, over MaxTokenBytes %d", ErrVocabulary, i, len(tok), MaxTokenBytes)
		}
		if !isSpecial(types[i]) {
			continue
		}
		switch {
		case tok == "":
			return nil, fmt.Errorf("%w: special token %d has no text", ErrVocabulary, i)
		case len(tok) > MaxSpecialTokenBytes:
			return nil, fmt.Errorf("%w: special token %d is %d bytes, over MaxSpecialTokenBytes %d", ErrVocabulary, i, len(tok), MaxSpecialTokenBytes)
		case len(special) == MaxSpecialTokens:
			return nil, fmt.Errorf("%w: more than MaxSpecialTokens %d special (control or user-defined) tokens", ErrVocabulary, MaxSpecialTokens)
		}
		special = append(special, tok)
	}
	return special, nil
}

// describe is a metadata value as an error names it: an array's length, else its type.
func describe(v any) string {
	if s, ok := v.([]string); ok {
		return fmt.Sprintf("%d", len(s))
	}
	return fmt.Sprintf("a %T", v)
}

func uintValue(h *gguf.Header, key string) (uint64, bool) {
	v, _ := h.Lookup(key)
	switch n := v.(type) {
	case uint32:
		return uint64(n), true
	case uint64:
		return n, true
	case int32:
		return uint64(n), n >= 0
	}
	return 0, false
}

// count encodes text without special tokens.
func (t *Tokenizer) count(text string) (int64, error) {
	if len(text) > MaxTextBytes {
		return 0, fmt.Errorf("text of %d bytes is over the %d bytes a count takes", len(text), MaxTextBytes)
	}
	if text == "" {
		return 0, nil
	}
	return t.encodeCount(text, nil)
}

// encodeCount is the number of tokens ollama's SentencePiece.Encode(text, false) returns: the
// special tokens special finds, and the merged tokens of each text between them. ops, when not
// nil, counts the work (specials.find, merger.count).
func (t *Tokenizer) encodeCount(text string, ops *int64) (int64, error) {
	var n int64
	at := 0
	for _, sp := range t.special.find(text, ops) {
		if at < sp.start {
			n += t.merge.count(text[at:sp.start], ops)
		}
		n++
		at = sp.end
	}
	if at < len(text) {
		n += t.merge.count(text[at:], ops)
	}
	return n, nil
}

// TextTokens counts a completion's text: its tokens as the vocabulary encodes it, no special
// tokens and no space prefix.
func (t *Tokenizer) TextTokens(text string) (int64, error) { return t.count(text) }

// Render is a chat prompt as template renders it for counting: lines joins the messages one a
// line, a non-user role written as "role: " before its content; contents is not one text (each
// content is counted alone) and renders as their concatenation.
func Render(template contract.TokenizerTemplate, roles, contents []string) string {
	var b strings.Builder
	for i := range contents {
		if template == contract.TokenizerTemplateLines {
			if i > 0 {
				b.WriteByte('\n')
			}
			if roles[i] != "user" {
				b.WriteString(roles[i])
				b.WriteString(": ")
			}
		}
		b.WriteString(contents[i])
	}
	return b.String()
}

// PromptTokens counts a prompt, given as its messages' roles and contents in order (a
// completions prompt is one user message), as template renders it: for lines, the rendered text
// with the space prefix when the vocabulary has one, plus one BOS token when it asks for one; for
// contents, the sum of each content's tokens alone, nothing added (the server's template tokens
// are not counted).
func (t *Tokenizer) PromptTokens(template contract.TokenizerTemplate, roles, contents []string) (int64, error) {
	if len(roles) != len(contents) {
		return 0, fmt.Errorf("%d roles for %d contents", len(roles), len(contents))
	}
	switch template {
	case contract.TokenizerTemplateContents:
		var n int64
		for _, c := range contents {
			k, err := t.count(c)
			if err != nil {
				return 0, err
			}
			n += k
		}
		return n, nil
	case contract.TokenizerTemplateLines:
		text := Render(template, roles, contents)
		if t.spacePrefix && text != "" {
			text = " " + text
		}
		n, err := t.count(text)
		if err != nil {
			return 0, err
		}
		if t.addBOS {
			n++
		}
		return n, nil
	}
	return 0, fmt.Errorf("template %q: want lines or contents", template)
}
