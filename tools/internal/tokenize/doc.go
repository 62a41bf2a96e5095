// Package tokenize counts tokens with a model's own vocabulary, for the client-side token ledger
// (docs/tokens.md): qualrun counts every prompt and completion with it beside the server's usage,
// and qualsim counts its usage with it when given one.
//
// A Tokenizer is loaded from a GGUF file's embedded vocabulary (tokenizer.ggml.model "llama": a
// SentencePiece vocabulary with scores, token types and byte fallback) and encodes with ollama's
// tokenizer package (github.com/ollama/ollama/tokenizer), the implementation ollama itself runs.
// The file is untrusted: it is read with the bounded GGUF reader of tools/internal/gguf, and the
// vocabulary is checked (limits.go) before the tokenizer sees it, so that nothing in it can make
// the encoder panic or loop.
package tokenize
