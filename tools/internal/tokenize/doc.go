// Package tokenize counts tokens with a model's own vocabulary, for the client-side token ledger
// (docs/tokens.md): qualrun counts every prompt and completion with it beside the server's usage,
// and qualsim counts its usage with it when given one.
//
// A Tokenizer is loaded from a GGUF file's embedded vocabulary (tokenizer.ggml.model "llama": a
// SentencePiece vocabulary with scores, token types and byte fallback) and counts a text as
// ollama's tokenizer package (github.com/ollama/ollama/tokenizer, the implementation ollama
// itself runs) encodes it, in time linear in the text's length whatever the vocabulary: special
// tokens are found in one pass (special.go) and the text between them is merged piece by piece
// (merge.go); the tests check the counts against ollama's package. The file is untrusted: it is
// read with the bounded GGUF reader of tools/internal/gguf, and the vocabulary is checked against
// the limits of limits.go before anything is built from it.
package tokenize
