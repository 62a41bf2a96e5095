package gencheck

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
