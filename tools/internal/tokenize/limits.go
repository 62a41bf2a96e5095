package tokenize

// Limits on untrusted input.
const (
	// MaxVocabulary bounds the number of tokens of a vocabulary.
	MaxVocabulary = 1 << 20
	// MaxTokenBytes bounds the text of one token.
	MaxTokenBytes = 1 << 10
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
