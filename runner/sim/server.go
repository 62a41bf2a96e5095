package sim

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Errors Serve ends with when a fault ends the server.
var (
	// ErrExitBeforeReady: the exit-before-ready fault ended the server.
	ErrExitBeforeReady = errors.New("exited before ready (fault exit-before-ready)")
	// ErrCrashed: the crash-after-events fault ended the server, and no WithCrash hook exited.
	ErrCrashed = errors.New("crashed mid-stream (fault crash-after-events)")
)

// DecoyModel is the only model /v1/models lists under the models-without-id fault.
const DecoyModel = "qualsim-decoy"

// Option configures a Server.
type Option func(*options)

type options struct {
	log    *slog.Logger
	gt     io.Writer
	crash  func()
	apiKey string
}

// WithAPIKey makes every /v1 endpoint require "Authorization: Bearer <key>" (the token compared
// in constant time), as vLLM, SGLang and llama-server do when started with --api-key. A request
// without it, with another scheme or with another token is answered 401 with an OpenAI error body
// (code "invalid_api_key") and WWW-Authenticate: Bearer; neither the answer nor the log quotes
// what was sent. /health and /metrics stay open, as in vLLM. An empty key turns the check off; a
// key with anything but visible ASCII is refused by New.
func WithAPIKey(key string) Option { return func(o *options) { o.apiKey = key } }

// WithLogger sends the server's log records to l (the default discards them).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.log = l } }

// WithGroundTruth writes the ground-truth log to w: one JSON line per SSE event flushed (and per
// response headers, slot acquisition and non-streamed body), with its CLOCK_MONOTONIC time in
// nanoseconds (see MonotonicNanos). Lines are written by a separate goroutine and flushed at
// least every 100 ms and when Serve returns.
func WithGroundTruth(w io.Writer) Option { return func(o *options) { o.gt = w } }

// WithCrash sets what the crash-after-events fault does once the ground-truth log is flushed:
// the qualsim command passes a function that exits the process at once. Without it (or if it
// returns), the connection is aborted, every other connection is closed and Serve returns
// ErrCrashed.
func WithCrash(fn func()) Option { return func(o *options) { o.crash = fn } }

// Server is one qualsim server. Serve may be called once.
type Server struct {
	cfg     Config
	log     *slog.Logger
	opts    options
	models  map[string]bool
	created int64
	slots   chan struct{}
	m       metrics
	cache   *prefixCache

	seq     atomic.Uint64
	ready   atomic.Bool
	served  atomic.Bool
	cutting atomic.Bool
	conns   tracker
	gt      *groundTruth

	crashOnce sync.Once
	crashed   chan struct{}
}

// New validates cfg and returns a server that has not started.
func New(cfg Config, opts ...Option) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	o := options{}
	for _, opt := range opts {
		opt(&o)
	}
	if o.log == nil {
		o.log = slog.New(slog.DiscardHandler)
	}
	for i := 0; i < len(o.apiKey); i++ {
		if c := o.apiKey[i]; c < 0x21 || c > 0x7e {
			// The key is never quoted: only its length and the offending position.
			return nil, fmt.Errorf("%w: API key (%d bytes): byte %d is not visible ASCII, which a bearer token must be", ErrConfig, len(o.apiKey), i)
		}
	}
	s := &Server{
		cfg:     cfg,
		log:     o.log,
		opts:    o,
		models:  map[string]bool{},
		created: time.Now().Unix(),
		slots:   make(chan struct{}, cfg.Slots),
		crashed: make(chan struct{}),
		cache:   newPrefixCache(cfg.PrefixCache),
	}
	s.cfg.Models = append([]string(nil), cfg.Models...)
	for _, m := range cfg.Models {
		s.models[m] = true
	}
	return s, nil
}

// Serve serves HTTP/1.1 on ln, which must be a loopback address, until ctx is done or a fault
// ends it, and closes ln. When ctx is done it shuts down gracefully: it stops accepting, lets
// in-flight requests finish within ShutdownGrace, cuts those still running, waits out the
// slow-shutdown fault if any, flushes the ground-truth log and returns nil. It returns
// ErrExitBeforeReady or ErrCrashed when those faults end it.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	if !s.served.CompareAndSwap(false, true) {
		return errors.New("sim: Serve called twice")
	}
	if err := CheckLoopback(ln.Addr().String()); err != nil {
		ln.Close()
		return err
	}
	if s.opts.gt != nil {
		s.gt = startGroundTruth(s.opts.gt, func() { s.m.gtDropped.Add(1) })
	}
	base, cut := context.WithCancel(context.WithoutCancel(ctx))
	defer cut()
	hs := &http.Server{
		Handler:           s.handler(),
		ReadHeaderTimeout: ReadHeaderTimeout,
		IdleTimeout:       IdleTimeout,
		MaxHeaderBytes:    MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
		BaseContext:       func(net.Listener) context.Context { return base },
		ConnState:         s.conns.state,
	}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	s.log.Info("serving", "addr", ln.Addr().String(), "models", s.cfg.Models, "faults", s.cfg.Faults.Specs(), "api_key", s.opts.apiKey != "") // not a contract value: a log message

	startup := time.NewTimer(s.cfg.Timing.StartupDelay)
	defer startup.Stop()
	for {
		select {
		case <-startup.C:
			switch {
			case s.cfg.Faults.ExitBeforeReady:
				s.log.Warn("exiting before ready", "fault", "exit-before-ready")
				return errors.Join(ErrExitBeforeReady, s.abort(hs, cut, served))
			case s.cfg.Faults.NeverReady:
				s.log.Warn("staying not ready", "fault", "never-ready")
			default:
				s.ready.Store(true)
				s.log.Info("ready", "models", s.cfg.Models)
			}
		case <-s.crashed:
			return errors.Join(ErrCrashed, s.abort(hs, cut, served))
		case err := <-served:
			served <- err
			return errors.Join(fmt.Errorf("serve %s: %w", ln.Addr(), err), s.abort(hs, cut, served))
		case <-ctx.Done():
			return s.shutdown(hs, cut, served)
		}
	}
}

// abort closes everything at once and waits for the handlers to return.
func (s *Server) abort(hs *http.Server, cut context.CancelFunc, served chan error) error {
	s.cutting.Store(true)
	s.ready.Store(false)
	cut()
	hs.Close()
	<-served
	<-s.conns.idle()
	return s.gt.close()
}

func (s *Server) shutdown(hs *http.Server, cut context.CancelFunc, served chan error) error {
	began := time.Now()
	s.log.Info("shutting down", "grace", s.cfg.ShutdownGrace, "open_connections", s.conns.count())
	stopPolling, stop := context.WithCancel(context.Background())
	defer stop()
	shut := make(chan error, 1)
	go func() { shut <- hs.Shutdown(stopPolling) }()
	<-served // the listener is closed: nothing new is accepted
	grace := time.NewTimer(s.cfg.ShutdownGrace)
	defer grace.Stop()
	crashed := false
	select {
	case <-s.conns.idle():
	case <-grace.C:
		s.log.Warn("cutting requests still running after the shutdown grace", "open_connections", s.conns.count())
	case <-s.crashed:
		crashed = true
	}
	s.cutting.Store(true)
	s.ready.Store(false)
	cut()
	stop()
	hs.Close()
	<-shut
	<-s.conns.idle()
	if wait := time.Until(began.Add(s.cfg.Faults.SlowShutdown)); wait > 0 {
		s.log.Warn("shutting down slowly", "fault", "slow-shutdown", "remaining", wait)
		time.Sleep(wait)
	}
	err := s.gt.close()
	if crashed {
		return errors.Join(ErrCrashed, err)
	}
	s.log.Info("stopped", "after", time.Since(began))
	return err
}

// crash carries out the crash-after-events fault from inside a handler; it does not return.
func (s *Server) crash(id string, event int) {
	s.m.fail(reasonCrash)
	s.log.Warn("crashing", "fault", "crash-after-events", "request_id", id, "event", event)
	s.gt.flush()
	if s.opts.crash != nil {
		s.opts.crash()
	}
	s.crashOnce.Do(func() { close(s.crashed) })
	panic(http.ErrAbortHandler)
}

// tracker counts open connections and tells when there are none.
type tracker struct {
	mu   sync.Mutex
	n    int
	zero chan struct{}
}

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

func (t *tracker) state(_ net.Conn, st http.ConnState) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch st {
	case http.StateNew:
		if t.n == 0 {
			t.zero = make(chan struct{})
		}
		t.n++
	case http.StateClosed, http.StateHijacked:
		t.n--
		if t.n == 0 {
			close(t.zero)
		}
	}
}

func (t *tracker) idle() <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.n == 0 {
		return closedChan
	}
	return t.zero
}

func (t *tracker) count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.n
}

// handler returns the server's routes.
func (s *Server) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", s.handleModels)
	mux.HandleFunc("GET /v1/models/{id}", s.handleModel)
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) { s.handleCompletion(w, r, apiChat) })
	mux.HandleFunc("POST /v1/completions", func(w http.ResponseWriter, r *http.Request) { s.handleCompletion(w, r, apiCompletions) })
	mux.HandleFunc("POST /v1/responses", func(w http.ResponseWriter, r *http.Request) { s.handleCompletion(w, r, apiResponses) })
	mux.HandleFunc("GET /health", s.handleHealth)
	mux.HandleFunc("GET /metrics", s.handleMetrics)
	mux.HandleFunc("POST /reset_prefix_cache", s.handleResetPrefixCache)
	mux.HandleFunc("/", s.handleOther)
	if s.opts.apiKey == "" {
		return mux
	}
	want := []byte("Bearer " + s.opts.apiKey)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p := r.URL.Path; p == "/v1" || strings.HasPrefix(p, "/v1/") {
			if e := authorize(r.Header.Values("Authorization"), want); e != nil {
				w.Header().Set("WWW-Authenticate", `Bearer realm="qualsim"`)
				s.writeError(w, endpointOf(p), e)
				return
			}
		}
		mux.ServeHTTP(w, r)
	})
}

// authorize checks the Authorization header values of a request against "Bearer <key>"; the
// scheme is case-insensitive (RFC 9110 §11.1), the token compared in constant time. The error
// message says what was wrong without quoting what was sent.
func authorize(got []string, want []byte) *apiError {
	e := &apiError{status: http.StatusUnauthorized, typ: "invalid_request_error", code: "invalid_api_key"}
	switch {
	case len(got) == 0:
		e.message = "missing API key: send Authorization: Bearer <key>"
	case len(got) > 1:
		e.message = "more than one Authorization header"
	default:
		scheme, token, _ := strings.Cut(got[0], " ")
		if !strings.EqualFold(scheme, "Bearer") {
			e.message = "the Authorization header is not a bearer token: send Authorization: Bearer <key>"
		} else if subtle.ConstantTimeCompare(append([]byte("Bearer "), token...), want) != 1 {
			e.message = "invalid API key"
		} else {
			return nil
		}
	}
	return e
}

// endpointOf names a path as the request counters do.
func endpointOf(path string) string {
	if _, ok := routes[path]; ok {
		return path
	}
	if strings.HasPrefix(path, "/v1/models/") {
		return "/v1/models/{id}"
	}
	return "other" // not a contract value: qualsim's endpoint label
}

var routes = map[string]string{
	"/v1/models":           "GET, HEAD",
	"/v1/chat/completions": "POST",
	"/v1/completions":      "POST",
	"/v1/responses":        "POST",
	"/health":              "GET, HEAD",
	"/metrics":             "GET, HEAD",
	"/reset_prefix_cache":  "POST",
}

func (s *Server) handleOther(w http.ResponseWriter, r *http.Request) {
	if allow, ok := routes[r.URL.Path]; ok {
		w.Header().Set("Allow", allow)
		s.writeError(w, "other", &apiError{status: http.StatusMethodNotAllowed, typ: "invalid_request_error", message: fmt.Sprintf("method %s not allowed on %s", r.Method, r.URL.Path)}) // not a contract value: qualsim's endpoint label
		return
	}
	s.writeError(w, "other", &apiError{status: http.StatusNotFound, typ: "invalid_request_error", message: fmt.Sprintf("no route %s %s", r.Method, r.URL.Path)}) // not a contract value: qualsim's endpoint label
}

func (s *Server) writeJSON(w http.ResponseWriter, endpoint string, status int, body []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	w.Write(body)
	s.m.request(endpoint, status)
}

func (s *Server) writeError(w http.ResponseWriter, endpoint string, e *apiError) {
	if e.status == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", "1")
	}
	s.writeJSON(w, endpoint, e.status, e.body())
}

func notReady() *apiError {
	return &apiError{status: http.StatusServiceUnavailable, typ: "server_error", code: "model_not_ready", message: "model is loading"}
}

func (s *Server) appendModel(b []byte, id string) []byte {
	b = append(b, `{"id":`...)
	b = appendJSONString(b, id)
	b = append(b, `,"object":"model","created":`...)
	b = strconv.AppendInt(b, s.created, 10)
	return append(b, `,"owned_by":"qualsim"}`...)
}

func (s *Server) handleModels(w http.ResponseWriter, r *http.Request) {
	const endpoint = "/v1/models"
	if d := s.cfg.Faults.SlowModels; d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return
		}
	}
	if !s.ready.Load() {
		s.writeError(w, endpoint, notReady())
		return
	}
	ids := s.cfg.Models
	if s.cfg.Faults.ModelsWithoutID {
		ids = []string{DecoyModel}
	}
	b := []byte(`{"object":"list","data":[`)
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = s.appendModel(b, id)
	}
	b = append(b, "]}\n"...)
	s.writeJSON(w, endpoint, http.StatusOK, b)
}

func (s *Server) handleModel(w http.ResponseWriter, r *http.Request) {
	const endpoint = "/v1/models/{id}"
	if !s.ready.Load() {
		s.writeError(w, endpoint, notReady())
		return
	}
	id := r.PathValue("id")
	if !s.models[id] || s.cfg.Faults.ModelsWithoutID {
		s.writeError(w, endpoint, &apiError{status: http.StatusNotFound, typ: "invalid_request_error", param: "model", code: "model_not_found", message: fmt.Sprintf("model %q not found", id)})
		return
	}
	s.writeJSON(w, endpoint, http.StatusOK, append(s.appendModel(nil, id), '\n'))
}

func (s *Server) handleHealth(w http.ResponseWriter, _ *http.Request) {
	if !s.ready.Load() {
		s.writeJSON(w, "/health", http.StatusServiceUnavailable, []byte(`{"status":"loading"}`+"\n"))
		return
	}
	s.writeJSON(w, "/health", http.StatusOK, []byte(`{"status":"ok"}`+"\n"))
}

// handleResetPrefixCache empties the prefix cache, as vLLM's POST /reset_prefix_cache does (in
// dev mode): 200 with the cache on; 404 without one (there is nothing to reset, and a caller that
// expected a cache must see that it has none).
func (s *Server) handleResetPrefixCache(w http.ResponseWriter, _ *http.Request) {
	if s.cache == nil {
		s.writeError(w, "/reset_prefix_cache", &apiError{status: http.StatusNotFound, typ: "invalid_request_error", message: "no prefix cache to reset: start qualsim with --prefix-cache"}) // not a contract value: qualsim's error type
		return
	}
	s.cache.reset()
	s.m.prefixResets.Add(1)
	s.writeJSON(w, "/reset_prefix_cache", http.StatusOK, []byte(`{"status":"ok"}`+"\n"))
}

func (s *Server) handleMetrics(w http.ResponseWriter, _ *http.Request) {
	// Count this scrape before rendering, so that it sees itself.
	s.m.request("/metrics", http.StatusOK)
	b := s.m.appendText(nil, s.cfg.Slots, s.ready.Load(), s.cache != nil, s.cfg.SpecDecode.DraftTokens > 0)
	h := w.Header()
	h.Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.Write(b)
}
