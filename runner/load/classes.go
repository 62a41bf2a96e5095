package load

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/qualkit/qualkit/schemas/contract"
)

// Error classes of a failed request (the request record contract's enum). A failed request never
// yields a guessed number: its record carries one of these and metrics exclude it from latency.
const (
	// ClassConnection: the connection could not be made or broke before the response headers, or
	// the response was not valid HTTP/1.1.
	ClassConnection = "connection"
	// ClassHTTPStatus: the response status was not 2xx.
	ClassHTTPStatus = "http_status"
	// ClassTimeout: the request timeout (request_timeout_seconds) ran out.
	ClassTimeout = "timeout"
	// ClassTruncatedStream: the response ended before data: [DONE], or in the middle of an event
	// or chunk.
	ClassTruncatedStream = "truncated_stream"
	// ClassOversizeLine: an SSE line or event exceeded the limit.
	ClassOversizeLine = "oversize_line"
	// ClassMalformedEvent: an event was not a valid completion chunk (invalid JSON, an unknown SSE
	// field or event type, an in-stream error, an event after [DONE], the wrong Content-Type).
	ClassMalformedEvent = "malformed_event"
	// ClassMissingUsage: the stream carried no usage record.
	ClassMissingUsage = "missing_usage"
	// ClassDuplicateUsage: the stream carried more than one usage record.
	ClassDuplicateUsage = "duplicate_usage"
	// ClassInconsistentUsage: usage.total_tokens != prompt_tokens + completion_tokens, a count
	// was missing, negative or not an integer, completion_tokens is 0 beside generated content,
	// prompt_tokens exceeds the request body's bytes plus MaxTemplateTokens, or the usage record
	// came before content.
	ClassInconsistentUsage = "inconsistent_usage"
	// ClassUsageExceedsMaxTokens: usage.completion_tokens is greater than the request's
	// max_tokens, which no conforming server can generate (a protocol violation, checked with or
	// without declared assertions).
	ClassUsageExceedsMaxTokens = "usage_exceeds_max_tokens"
	// ClassContentAfterFinish: a content event arrived after the event that carried the
	// finish_reason (the finish event may itself carry content).
	ClassContentAfterFinish = "content_after_finish"
	// ClassDuplicateFinishReason: a second event carried a non-null finish_reason.
	ClassDuplicateFinishReason = "duplicate_finish_reason"
	// ClassAssertion: a declared output assertion failed.
	ClassAssertion = "assertion"
	// ClassCancelled: the run's context was cancelled while the request was in flight.
	ClassCancelled = "cancelled"
)

// reqError builds a record error, clipping the message to the contract's limit.
func reqError(class, format string, args ...any) *contract.RequestError {
	msg := fmt.Sprintf(format, args...)
	if msg == "" {
		msg = class
	}
	return &contract.RequestError{Class: contract.ErrorClass(class), Message: clipRunes(msg, MaxMessageRunes)}
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
