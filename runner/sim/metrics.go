package sim

import (
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Reasons counted by qualsim_errors_total.
type errReason int

const (
	reasonBadRequest errReason = iota
	reasonUnknownModel
	reasonBodyTooLarge
	reasonNotReady
	reasonInjected429
	reasonInjected500
	reasonClientGone
	reasonCut
	reasonCrash
	numReasons
)

var reasonNames = [numReasons]string{
	"bad_request", "unknown_model", "body_too_large", "not_ready", "injected_429", "injected_500",
	"client_disconnected", "cut_at_shutdown", "crash",
}

type codeKey struct {
	endpoint string
	code     int
}

// metrics are the counters and gauges /metrics exposes. Everything on the per-event path is an
// atomic; the per-request (endpoint, code) counter takes a mutex once per request.
type metrics struct {
	mu       sync.Mutex
	requests map[codeKey]uint64

	promptTokens     atomic.Uint64
	generationTokens atomic.Uint64
	events           atomic.Uint64
	eventBytes       atomic.Uint64
	activeStreams    atomic.Int64
	running          atomic.Int64
	waiting          atomic.Int64
	queueWaitNanos   atomic.Uint64
	queueWaits       atomic.Uint64
	errors           [numReasons]atomic.Uint64
	gtDropped        atomic.Uint64
	prefixQueries    atomic.Uint64
	prefixHits       atomic.Uint64
	prefixResets     atomic.Uint64
	promptImages     atomic.Uint64
	specDrafts       atomic.Uint64
	specDraftTokens  atomic.Uint64
	specAccepted     atomic.Uint64
}

func (m *metrics) request(endpoint string, code int) {
	m.mu.Lock()
	if m.requests == nil {
		m.requests = map[codeKey]uint64{}
	}
	m.requests[codeKey{endpoint, code}]++
	m.mu.Unlock()
}

func (m *metrics) fail(r errReason) { m.errors[r].Add(1) }

func (m *metrics) queued(d time.Duration) {
	m.queueWaitNanos.Add(uint64(d))
	m.queueWaits.Add(1)
}

// appendText renders the Prometheus text exposition format (version 0.0.4).
func (m *metrics) appendText(b []byte, slots int, ready, prefixCache, specDecode bool) []byte {
	family := func(name, typ, help string) {
		b = append(b, "# HELP "...)
		b = append(b, name...)
		b = append(b, ' ')
		b = append(b, help...)
		b = append(b, "\n# TYPE "...)
		b = append(b, name...)
		b = append(b, ' ')
		b = append(b, typ...)
		b = append(b, '\n')
	}
	sample := func(name, labels string, v uint64) {
		b = append(b, name...)
		b = append(b, labels...)
		b = append(b, ' ')
		b = strconv.AppendUint(b, v, 10)
		b = append(b, '\n')
	}
	gauge := func(name, help string, v int64) {
		family(name, "gauge", help)
		b = append(b, name...)
		b = append(b, ' ')
		b = strconv.AppendInt(b, v, 10)
		b = append(b, '\n')
	}

	family("qualsim_http_requests_total", "counter", "HTTP requests answered, by endpoint and status code.")
	m.mu.Lock()
	keys := make([]codeKey, 0, len(m.requests))
	for k := range m.requests {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b codeKey) int {
		if a.endpoint != b.endpoint {
			if a.endpoint < b.endpoint {
				return -1
			}
			return 1
		}
		return a.code - b.code
	})
	counts := make([]uint64, len(keys))
	for i, k := range keys {
		counts[i] = m.requests[k]
	}
	m.mu.Unlock()
	for i, k := range keys {
		sample("qualsim_http_requests_total", `{endpoint="`+k.endpoint+`",code="`+strconv.Itoa(k.code)+`"}`, counts[i])
	}

	family("qualsim_prompt_tokens_total", "counter", "Prompt tokens of completion requests that got a slot (vLLM: prompt_tokens_total).")
	sample("qualsim_prompt_tokens_total", "", m.promptTokens.Load())
	if prefixCache {
		family("qualsim_prefix_cache_queries_total", "counter", "Prompt tokens looked up in the prefix cache (vLLM: prefix_cache_queries).")
		sample("qualsim_prefix_cache_queries_total", "", m.prefixQueries.Load())
		family("qualsim_prefix_cache_hits_total", "counter", "Prompt tokens found in the prefix cache (vLLM: prefix_cache_hits).")
		sample("qualsim_prefix_cache_hits_total", "", m.prefixHits.Load())
		family("qualsim_prefix_cache_resets_total", "counter", "Prefix cache resets (POST /reset_prefix_cache).")
		sample("qualsim_prefix_cache_resets_total", "", m.prefixResets.Load())
	}
	family("qualsim_prompt_images_total", "counter", "Images in the prompts of completion requests accepted.")
	sample("qualsim_prompt_images_total", "", m.promptImages.Load())
	if specDecode {
		family("qualsim_spec_decode_num_drafts_total", "counter", "Speculative decode steps of finished responses (vLLM: spec_decode_num_drafts).")
		sample("qualsim_spec_decode_num_drafts_total", "", m.specDrafts.Load())
		family("qualsim_spec_decode_num_draft_tokens_total", "counter", "Draft tokens proposed (vLLM: spec_decode_num_draft_tokens).")
		sample("qualsim_spec_decode_num_draft_tokens_total", "", m.specDraftTokens.Load())
		family("qualsim_spec_decode_num_accepted_tokens_total", "counter", "Draft tokens accepted (vLLM: spec_decode_num_accepted_tokens).")
		sample("qualsim_spec_decode_num_accepted_tokens_total", "", m.specAccepted.Load())
	}
	family("qualsim_generation_tokens_total", "counter", "Completion tokens of finished responses, as their usage reports (vLLM: generation_tokens_total).")
	sample("qualsim_generation_tokens_total", "", m.generationTokens.Load())
	family("qualsim_sse_events_total", "counter", "SSE events flushed to clients.")
	sample("qualsim_sse_events_total", "", m.events.Load())
	family("qualsim_sse_event_bytes_total", "counter", "Bytes of the SSE events flushed to clients.")
	sample("qualsim_sse_event_bytes_total", "", m.eventBytes.Load())
	gauge("qualsim_active_streams", "Streaming responses in progress (headers sent, stream not ended).", m.activeStreams.Load())
	gauge("qualsim_num_requests_running", "Requests holding a decode slot (vLLM: num_requests_running).", m.running.Load())
	gauge("qualsim_num_requests_waiting", "Requests queued for a decode slot (vLLM: num_requests_waiting).", m.waiting.Load())
	gauge("qualsim_decode_slots", "Declared decode-slot limit.", int64(slots))
	family("qualsim_queue_wait_seconds", "summary", "Time completion requests waited for a decode slot.")
	b = append(b, "qualsim_queue_wait_seconds_sum "...)
	b = strconv.AppendFloat(b, float64(m.queueWaitNanos.Load())/1e9, 'g', -1, 64)
	b = append(b, '\n')
	sample("qualsim_queue_wait_seconds_count", "", m.queueWaits.Load())
	family("qualsim_errors_total", "counter", "Failed or cut completion requests, by reason.")
	for r := range numReasons {
		sample("qualsim_errors_total", `{reason="`+reasonNames[r]+`"}`, m.errors[r].Load())
	}
	family("qualsim_ground_truth_dropped_total", "counter", "Ground-truth records dropped because the writer fell behind.")
	sample("qualsim_ground_truth_dropped_total", "", m.gtDropped.Load())
	r := int64(0)
	if ready {
		r = 1
	}
	gauge("qualsim_ready", "1 when /v1/models answers 200.", r)
	return b
}
