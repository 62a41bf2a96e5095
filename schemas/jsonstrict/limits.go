package jsonstrict

// Limits on untrusted JSON input. Every decoder in this module takes its
// defaults from here, so the whole budget can be read in one place.
const (
	// MaxDocumentBytes is the default cap on the size of one JSON document.
	// WithMaxBytes overrides it per call.
	MaxDocumentBytes = 64 << 20

	// MaxDepth is the default cap on the nesting of arrays and objects; a
	// top-level object or array is depth 1. WithMaxDepth overrides it per call.
	MaxDepth = 64

	// MaxIntegerDigits is the most digits (sign excluded) an integer literal
	// may have. Kiln's strict_json.py uses the same bound.
	MaxIntegerDigits = 4096

	// MaxStringBytes is the most bytes a decoded JSON string (value or key)
	// may have.
	MaxStringBytes = 16 << 20

	// maxDepthCeiling bounds WithMaxDepth and the recursion of the canonical
	// encoders over Go-built values, so no option or cyclic value can exhaust
	// the stack.
	maxDepthCeiling = 10000
)
