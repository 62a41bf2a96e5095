package sim

import "time"

// Limits on untrusted input and on the declared configuration, in one place.
const (
	// MaxRequestBodyBytes bounds a POST body; a larger one is answered with HTTP 413.
	MaxRequestBodyBytes = 4 << 20
	// MaxHeaderBytes bounds the request line and headers (http.Server.MaxHeaderBytes).
	MaxHeaderBytes = 64 << 10
	// ReadHeaderTimeout bounds how long a connection may take to send its request headers.
	ReadHeaderTimeout = 10 * time.Second
	// IdleTimeout closes keep-alive connections idle for longer.
	IdleTimeout = 120 * time.Second
	// MaxToolRounds bounds ToolCalls.Rounds.
	MaxToolRounds = 16
	// MaxMessages bounds the messages of one chat request.
	MaxMessages = 4096
	// MaxStopStrings bounds the stop strings of one request.
	MaxStopStrings = 16
	// MaxStopBytes bounds the length of one stop string.
	MaxStopBytes = 256
	// MaxCompletionTokens bounds max_tokens; a larger request is answered with HTTP 400.
	MaxCompletionTokens = 1 << 17
	// MaxImages bounds the images of one message.
	MaxImages = 64
	// MaxImageTokens bounds what one image may count.
	MaxImageTokens = 1 << 14
	// MaxToolCalls bounds the calls of one assistant message a request re-sends.
	MaxToolCalls = 64
	// MaxTools bounds the tools of one request.
	MaxTools = 128
	// MaxDraftTokens bounds the declared speculative draft length.
	MaxDraftTokens = 64
	// MaxModels bounds the declared model ids.
	MaxModels = 64
	// MaxModelIDBytes bounds one model id.
	MaxModelIDBytes = 256
	// MaxSlots bounds the decode-slot limit.
	MaxSlots = 1 << 16
	// MaxTokensPerEvent bounds the declared chunking.
	MaxTokensPerEvent = 4096
	// MaxHugeEventBytes bounds the huge-event fault.
	MaxHugeEventBytes = 256 << 20
	// MaxConfigBytes bounds a JSON configuration file.
	MaxConfigBytes = 1 << 20
	// MaxDuration bounds every declared duration (timing, stalls, shutdown).
	MaxDuration = 24 * time.Hour
	// groundTruthQueue is the capacity of the ground-truth channel; records beyond it are dropped
	// (and counted) rather than delaying the stream they describe.
	groundTruthQueue = 1 << 16
	// groundTruthFlushEvery is how often the ground-truth writer flushes its buffer.
	groundTruthFlushEvery = 100 * time.Millisecond
)
