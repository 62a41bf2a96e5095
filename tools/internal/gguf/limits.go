package gguf

// Limits of Read on untrusted input. A file beyond one of them is refused with an error naming
// the limit, before anything of that size is allocated.
const (
	// MaxMetadata bounds the number of metadata key/value pairs.
	MaxMetadata = 1 << 16
	// MaxTensors bounds the number of tensors in the table.
	MaxTensors = 1 << 16
	// MaxStringBytes bounds one string (a key, a value, an array element, a tensor name).
	MaxStringBytes = 1 << 20
	// MaxArrayLen bounds the number of elements of one metadata array.
	MaxArrayLen = 1 << 24
	// MaxHeaderBytes bounds the header as a whole: metadata and tensor table together.
	MaxHeaderBytes = 256 << 20
	// MaxDims is the most dimensions a tensor has (GGML_MAX_DIMS).
	MaxDims = 4
)
