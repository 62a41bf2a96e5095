package tokenize

// Limits on untrusted input.
const (
	// MaxVocabulary bounds the number of tokens of a vocabulary.
	MaxVocabulary = 1 << 20
	// MaxTokenBytes bounds the text of one token.
	MaxTokenBytes = 1 << 10
	// MaxSpecialTokens bounds the number of special (control or user-defined) tokens: they are
	// matched in every counted text (special.go), and the matcher's size and its per-count setup
	// grow with them.
	MaxSpecialTokens = 1 << 14
	// MaxSpecialTokenBytes bounds the text of one special token: a count's work is the text's
	// length times at most the number of distinct special-token lengths.
	MaxSpecialTokenBytes = 128
	// MaxMerges bounds tokenizer.ggml.merges when a file has it (a SentencePiece vocabulary
	// does not use it; a BPE one would).
	MaxMerges = 1 << 20
	// MaxTextBytes bounds the text of one Count call (a prompt as rendered, or a completion).
	MaxTextBytes = 16 << 20
	// MaxFileBytes bounds a tokenizer file's header as Load reads it (the tensor data after it is
	// never read).
	MaxFileBytes = 256 << 20
)

// CountLimits reports the most bytes a count takes and the most bytes of one token, so that a
// session case can be refused at plan time when a turn's history could exceed the first
// (runner/load.CountLimits).
func (t *Tokenizer) CountLimits() (maxTextBytes, maxTokenBytes int64) {
	return MaxTextBytes, MaxTokenBytes
}
