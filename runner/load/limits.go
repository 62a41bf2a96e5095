package load

import (
	"time"

	"github.com/qualkit/qualkit/schemas/promtext"
	"github.com/qualkit/qualkit/schemas/synth"
)

// Limits on untrusted input (server responses, corpus files, /metrics pages), in one place. A
// response that exceeds one fails its request with a named error class; it never grows memory
// without bound.
const (
	// DefaultMaxLineBytes bounds one SSE line (WithMaxLineBytes overrides it): a longer line fails
	// the request with class oversize_line.
	DefaultMaxLineBytes = 1 << 20
	// MaxEventDataBytes bounds the data of one SSE event (several data: lines joined); a larger
	// event fails with class oversize_line.
	MaxEventDataBytes = 4 << 20
	// MaxHeaderBytes bounds the status line and headers of a response.
	MaxHeaderBytes = 64 << 10
	// MaxChunkLineBytes bounds a chunked-encoding size line (extensions included) or trailer line.
	MaxChunkLineBytes = 4 << 10
	// MaxErrorBodyBytes bounds what is kept of a non-2xx response body (for the error message).
	MaxErrorBodyBytes = 64 << 10
	// MaxBodyBytes bounds a non-streamed JSON response body.
	MaxBodyBytes = 64 << 20
	// MaxEvents bounds the SSE events of one response (the request record's limit).
	MaxEvents = 1 << 20
	// MaxOutputBytes bounds the completion text of one response.
	MaxOutputBytes = 64 << 20
	// MaxOutputItems bounds the output items of a whole Responses API answer.
	MaxOutputItems = 1024
	// MaxTools bounds the function tools of a case's tools file.
	MaxTools = 128
	// MaxToolsBytes bounds a case's tools file.
	MaxToolsBytes = 1 << 20
	// MaxToolCalls bounds the tool calls of one response (the request record's limit; a call's
	// index is below it); more fail the request with class malformed_event.
	MaxToolCalls = 64
	// MaxToolArgumentBytes bounds the reassembled arguments of one tool call; longer ones fail the
	// request with class malformed_event.
	MaxToolArgumentBytes = 1 << 20
	// MaxToolCallIDBytes bounds a tool call's id and function name (the request record's limit).
	MaxToolCallIDBytes = 256
	// MaxJSONDepth bounds the nesting of one event's JSON.
	MaxJSONDepth = 64
	// MaxMessageRunes bounds an error message in a request record (the contract's limit).
	MaxMessageRunes = 2048
	// MaxDetailRunes bounds an assertion outcome's detail (the contract's limit).
	MaxDetailRunes = 512
	// MaxCorpusBytes bounds a JSONL corpus file.
	MaxCorpusBytes = synth.MaxCorpusBytes
	// MaxCorpusPrompts bounds the prompts of one corpus (file or synthetic).
	MaxCorpusPrompts = synth.MaxPrompts
	// MaxPromptBytes bounds one prompt's text or system message (1 Mi runes of up to 4 bytes).
	MaxPromptBytes = synth.MaxPromptBytes
	// MaxTemplateTokens bounds the prompt tokens a server may count beyond the request body's
	// bytes (its chat template, default system prompt): usage.prompt_tokens above len(body) +
	// MaxTemplateTokens is an impossible count (inconsistent_usage), and the bound keeps a row's
	// prompt-token sum far from overflow.
	MaxTemplateTokens = 1 << 20
	// MaxScrapeBytes bounds one /metrics page (the parser's bound, which the verifier applies to
	// the kept pages too).
	MaxScrapeBytes = promtext.MaxPageBytes
	// ScrapeTimeout bounds one /metrics scrape.
	ScrapeTimeout = 5 * time.Second
	// DialTimeout bounds establishing one connection (also bounded by the request timeout).
	DialTimeout = 10 * time.Second
	// MaxConcurrency bounds a row's concurrency (the contract's limit).
	MaxConcurrency = 4096
)
