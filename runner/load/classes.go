package load

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/qualkit/qualkit/schemas/contract"
)

// Error classes of a failed request (the request record contract's enum, contract.ErrorClass). A failed request never
// yields a guessed number: its record carries one of these and metrics exclude it from latency.
const (
	// ClassConnection: the connection could not be made or broke before the response headers, or
	// the response was not valid HTTP/1.1.
	ClassConnection = contract.ErrorClassConnection
	// ClassHTTPStatus: the response status was not 2xx.
	ClassHTTPStatus = contract.ErrorClassHTTPStatus
	// ClassTimeout: the request timeout (request_timeout_seconds) ran out.
	ClassTimeout = contract.ErrorClassTimeout
	// ClassTruncatedStream: the response ended before data: [DONE], or in the middle of an event
	// or chunk.
	ClassTruncatedStream = contract.ErrorClassTruncatedStream
	// ClassOversizeLine: an SSE line or event exceeded the limit.
	ClassOversizeLine = contract.ErrorClassOversizeLine
	// ClassMalformedEvent: an event was not a valid completion chunk (invalid JSON, an unknown SSE
	// field or event type, an in-stream error, an event after [DONE], the wrong Content-Type).
	ClassMalformedEvent = contract.ErrorClassMalformedEvent
	// ClassMissingUsage: the stream carried no usage record.
	ClassMissingUsage = contract.ErrorClassMissingUsage
	// ClassDuplicateUsage: the stream carried more than one usage record.
	ClassDuplicateUsage = contract.ErrorClassDuplicateUsage
	// ClassInconsistentUsage: usage.total_tokens != prompt_tokens + completion_tokens, a count
	// was missing, negative or not an integer, completion_tokens is 0 beside generated content,
	// prompt_tokens exceeds the request body's bytes plus MaxTemplateTokens, or the usage record
	// came before content.
	ClassInconsistentUsage = contract.ErrorClassInconsistentUsage
	// ClassUsageExceedsMaxTokens: usage.completion_tokens is greater than the request's
	// max_tokens, which no conforming server can generate (a protocol violation, checked with or
	// without declared assertions).
	ClassUsageExceedsMaxTokens = contract.ErrorClassUsageExceedsMaxTokens
	// ClassTokenMismatch: the client's token count of the prompt or the completion, with the
	// case's bound tokenizer, differs from the server's usage by more than the declared
	// max_request_difference (docs/tokens.md).
	ClassTokenMismatch = contract.ErrorClassTokenMismatch
	// ClassContentAfterFinish: a content event arrived after the event that carried the
	// finish_reason (the finish event may itself carry content).
	ClassContentAfterFinish = contract.ErrorClassContentAfterFinish
	// ClassDuplicateFinishReason: a second event carried a non-null finish_reason.
	ClassDuplicateFinishReason = contract.ErrorClassDuplicateFinishReason
	// ClassAssertion: a declared output assertion failed.
	ClassAssertion = contract.ErrorClassAssertion
	// ClassCancelled: the run's context was cancelled while the request was in flight.
	ClassCancelled = contract.ErrorClassCancelled
	// ClassCutAtGrace: the request was still in flight at its row's grace deadline (a row with a
	// duration) and was cut.
	ClassCutAtGrace = contract.ErrorClassCutAtGrace
)

// reqError builds a record error, clipping the message to the contract's limit.
func reqError(class contract.ErrorClass, format string, args ...any) *contract.RequestError {
	msg := fmt.Sprintf(format, args...)
	if msg == "" {
		msg = string(class)
	}
	return &contract.RequestError{Class: class, Message: clipRunes(msg, MaxMessageRunes)}
}

// clip shortens s to at most n bytes (on a rune boundary), marking the cut with "...".
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - 3
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// clipRunes shortens s to at most n runes, replacing invalid UTF-8, marking a cut with "...".
func clipRunes(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-3]) + "..."
}
