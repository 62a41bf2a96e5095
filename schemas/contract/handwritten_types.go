package contract

// The contract types tools/schemagen does not generate (zz_generated_types.go has the rest):
// OutputAssertion merges a command case's stream assertions and a serving case's response
// assertions (two element types under one field of the merged Case), which the generator does not
// merge. The CUE fields name it with @go(type="[]OutputAssertion").
//
// Conventions (as the generated types): a required field has no omitempty; a required field that
// may be null is a pointer (or an interface); an optional field has omitempty. Numbers the
// contract types as int are int64, other numbers float64. Open maps are map[string]any.

// OutputAssertion is a stream assertion of a command case (Stream set) or a response assertion of
// a serving case (Kind set).
type OutputAssertion struct {
	// Command case stream assertion.
	Stream string `json:"stream,omitempty"`
	// Match is "required" or "forbidden" (stream and regex assertions).
	Match   string `json:"match,omitempty"`
	Pattern string `json:"pattern,omitempty"`

	// Serving case response assertion.
	Kind     string  `json:"kind,omitempty"`
	Equals   string  `json:"equals,omitempty"`
	PromptID string  `json:"prompt_id,omitempty"`
	Text     *string `json:"text,omitempty"`
}
