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
