// Package gguf writes and reads GGUF version 3 files, the model format of llama.cpp, ollama and
// llama-server: a header, typed metadata key/value pairs, a table of tensors (name, dimensions,
// element type, offset) and the tensor data, each tensor aligned to general.alignment bytes.
//
// Write encodes what qualkit's generated test model needs: scalar, string and array metadata and
// F32 tensors, byte for byte the same for the same File. Read decodes the header, the metadata and
// the tensor table of any GGUF version 3 file (every metadata type, any tensor type) without
// reading the tensor data; it treats its input as untrusted and stops at the limits in limits.go.
//
// The layout follows the GGUF specification of the ggml project (docs/gguf.md there): all
// integers little-endian, strings as a uint64 length and UTF-8 bytes, arrays as an element type,
// a uint64 count and the elements, dimensions innermost (contiguous) first.
package gguf
