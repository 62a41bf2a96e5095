package load

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/qualkit/qualkit/schemas/contract"
)

// Option configures NewClient and Run.
type Option func(*options)

type options struct {
	log      *slog.Logger
	maxLine  int
	reactors int
	maxIdle  int
	maxConns int
	token    string
	sink     recordSink
	stall    stall
}

// stall is a test-only distortion (see distortion.go): the open-loop dispatcher sleeps d after
// every n-th send.
type stall struct {
	every int
	d     time.Duration
}

// WithLogger sends the package's debug records to l (the default discards them). Nothing the
// caller must see is only logged: it is in the results.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.log = l } }

// WithMaxLineBytes sets the longest SSE line accepted (default DefaultMaxLineBytes); n <= 0 keeps
// the default.
func WithMaxLineBytes(n int) Option {
	return func(o *options) {
		if n > 0 {
			o.maxLine = n
		}
	}
}

// WithReactors sets how many reader threads serve the connections (default: one per 128
// concurrent streams, at most GOMAXPROCS, at least one); n <= 0 keeps the default.
func WithReactors(n int) Option {
	return func(o *options) {
		if n > 0 {
			o.reactors = n
		}
	}
}

// WithMaxIdleConns sets how many idle keep-alive connections NewClient keeps (default 64; Run
// keeps one per concurrent stream of its largest row); n <= 0 keeps the default.
func WithMaxIdleConns(n int) Option {
	return func(o *options) {
		if n > 0 {
			o.maxIdle = n
		}
	}
}

// WithMaxConns limits the connections the client has open at once (n <= 0: no limit): a request
// that finds every one busy waits for one to come back, and that wait shows as schedule lag. The
// limit is recorded in each row's send calibration, so the fidelity verdict can name it
// (connection_wait) when it, not the server, held requests back.
func WithMaxConns(n int) Option {
	return func(o *options) {
		if n > 0 {
			o.maxConns = n
		}
	}
}

// WithBearerToken sends "Authorization: Bearer token" with every request of NewClient. The token
// is never recorded, and is replaced by [REDACTED] in any error message that quotes it. Run takes
// its token from Plan.TokenEnv instead (this option is used only when TokenEnv is empty).
func WithBearerToken(token string) Option { return func(o *options) { o.token = token } }

func buildOptions(opts []Option) options {
	o := options{maxLine: DefaultMaxLineBytes, maxIdle: 64}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	if o.log == nil {
		o.log = slog.New(slog.DiscardHandler)
	}
	return o
}

// defaultReactors: one reader thread per 128 streams, at most one per P. A single thread serves
// a burst of events sequentially, so at a few hundred streams a second one halves the time the
// last event of a burst waits (measured in docs/performance.md).
func defaultReactors(streams int) int {
	return min(max(1, runtime.GOMAXPROCS(0)), max(1, (streams+127)/128))
}

// Client sends OpenAI-compatible completion requests over HTTP/1.1 keep-alive connections to
// one loopback server, and stamps every SSE event with the monotonic clock when its bytes are
// read (see Response). It is safe for concurrent use; Close releases its connections and reader
// threads.
type Client struct {
	host   string         // Host header
	prefix string         // path prefix of the base URL
	addr   netip.AddrPort // the server; a unix.Sockaddr is built per dial (Connect writes into it)
	token  string
	opt    options

	reactors []*reactor
	next     atomic.Uint32
	unprocs  func() // gives back the Ps added for the reactors

	mu     sync.Mutex
	idle   []*conn
	open   map[*conn]struct{}
	closed bool

	// conns holds a token per open connection when WithMaxConns limits them (nil: no limit);
	// freed is signalled when a connection goes idle or closes.
	conns chan struct{}
	freed chan struct{}
}

// conn is one keep-alive connection.
type conn struct {
	fd int
	r  *reactor

	mu         sync.Mutex
	st         *stream // the request in flight, nil when idle
	registered bool    // in the reactor's epoll set
	closed     bool    // fd closed
	dead       bool    // cannot carry another request

	idleSince time.Time // when it went back to the pool (used by its pool owner only)
}

// probeIdleAfter: a connection idle for longer is probed (a non-blocking MSG_PEEK) before reuse.
// One idle for less needs no probe: an end the server sent meanwhile woke its reactor, which
// marked it dead, and a request that meets a close still in flight is sent again (see Do).
const probeIdleAfter = time.Second

// NewClient returns a client for baseURL, which must be http:// on a loopback address
// (127.0.0.0/8, ::1 or localhost): qualkit sends traffic nowhere else.
func NewClient(baseURL string, opts ...Option) (*Client, error) {
	o := buildOptions(opts)
	u, err := url.Parse(baseURL)
	if err != nil {
		return nil, fmt.Errorf("base URL %q: %w", baseURL, err)
	}
	if u.Scheme != "http" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("base URL %q: want http://HOST:PORT[/PREFIX] without user, query or fragment", baseURL)
	}
	for i := 0; i < len(o.token); i++ {
		if c := o.token[i]; c < 0x21 || c > 0x7e {
			return nil, fmt.Errorf("bearer token (%d bytes): byte %d is not visible ASCII; only visible ASCII can go in an Authorization header", len(o.token), i)
		}
	}
	host, portText := u.Hostname(), u.Port()
	if portText == "" {
		portText = "80"
	}
	port, err := strconv.ParseUint(portText, 10, 16)
	if err != nil || port == 0 {
		return nil, fmt.Errorf("base URL %q: bad port %q", baseURL, portText)
	}
	var ip netip.Addr
	if host == "localhost" {
		ip = netip.MustParseAddr("127.0.0.1")
	} else if ip, err = netip.ParseAddr(host); err != nil || !ip.IsLoopback() || ip.Zone() != "" {
		return nil, fmt.Errorf("base URL %q: host %q is not a loopback address (127.0.0.0/8, ::1 or localhost)", baseURL, host)
	}
	c := &Client{host: u.Host, prefix: strings.TrimSuffix(u.EscapedPath(), "/"), token: o.token, opt: o, open: map[*conn]struct{}{}, freed: make(chan struct{}, 1)}
	if o.maxConns > 0 {
		c.conns = make(chan struct{}, o.maxConns)
	}
	c.addr = netip.AddrPortFrom(ip.Unmap(), uint16(port))
	n := o.reactors
	if n == 0 {
		n = defaultReactors(o.maxIdle)
	}
	c.unprocs = addProcs(n)
	for range n {
		r, err := newReactor()
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("start reader thread: %w", err)
		}
		c.reactors = append(c.reactors, r)
	}
	return c, nil
}

// Request is one completion request.
type Request struct {
	// Path is the endpoint under the base URL: /v1/chat/completions or /v1/completions.
	Path string
	// Body is the exact JSON body sent.
	Body []byte
	// Stream says the body asks for an event stream ("stream": true).
	Stream bool
	// Timeout bounds the request from the moment Do is called; 0 means only ctx bounds it.
	Timeout time.Duration
	// Epoch is the origin of the response's *Ns offsets; it must carry a monotonic reading (as
	// time.Now's result does).
	Epoch time.Time
	// ExpectEvents sizes the event buffer (max_tokens is a good value); 0 is fine.
	ExpectEvents int
}

var errRequestTimeout = errors.New("request timeout")

// Do sends req and waits for the whole response. It always returns a Response: a failure is a
// Response with Err set, never a Go error, so that every request leaves a record. A request that
// fails on a reused keep-alive connection before any response byte arrived (the server closed
// the idle connection as the request went out) is sent once more on a new connection.
func (c *Client) Do(ctx context.Context, req Request) *Response {
	return c.Start(ctx, req).Wait()
}

// Call is a request that has been sent (or has failed to be sent) and not yet waited for.
type Call struct {
	c         *Client
	ctx       context.Context
	cancel    context.CancelFunc
	req       Request
	chat      bool
	wire      []byte
	ready     *stream // the first attempt's stream, built by Prepare
	st        *stream
	cn        *conn // nil when the attempt ended before the response (st is then finished)
	reused    bool
	sentNs    *int64 // the attempt's write returned (Response.TSentNs)
	attempt   int
	retryable bool // the failed attempt may be retried on a new connection
}

// Start sends req on the calling goroutine (t_send is stamped immediately before its write) and
// returns without waiting for the response; Wait must be called exactly once. Splitting the two
// lets a pacer send at its deadline and leave the wait to another goroutine. Start is Prepare
// then Send.
func (c *Client) Start(ctx context.Context, req Request) *Call {
	k := c.Prepare(req)
	k.Send(ctx)
	return k
}

// Prepare builds req's call without sending it: the bytes to write and the first attempt's
// stream (its buffers). Send sends it. The open-loop dispatcher prepares a request before it
// sleeps until the request's deadline, so that building it is not on the send path (the first
// request of a burst would otherwise delay every request behind it by its build). A prepared
// call that is never sent holds nothing to release.
func (c *Client) Prepare(req Request) *Call {
	k := &Call{c: c, req: req, chat: strings.HasSuffix(req.Path, "/chat/completions"), wire: c.wire(req)}
	k.ready = k.newStream()
	return k
}

// Send sends a prepared call on the calling goroutine, as Start does; req.Timeout runs from here.
func (k *Call) Send(ctx context.Context) {
	k.ctx, k.cancel = ctx, func() {}
	if k.req.Timeout > 0 {
		k.ctx, k.cancel = context.WithTimeoutCause(ctx, k.req.Timeout, errRequestTimeout)
	}
	k.send()
}

func (k *Call) newStream() *stream {
	return newStream(k.req.Epoch, k.chat, strings.HasSuffix(k.req.Path, "/responses"), k.req.Stream, k.c.opt.maxLine, k.req.ExpectEvents, k.c.token)
}

// send makes one attempt: a connection, the stream, the stamp and the write.
func (k *Call) send() {
	c, ctx := k.c, k.ctx
	st := k.ready
	if st == nil {
		st = k.newStream()
	}
	k.ready = nil
	k.st, k.cn, k.retryable, k.sentNs = st, nil, false, nil
	cn, reused, err := c.get(ctx)
	if err != nil {
		if ctx.Err() != nil {
			st.abort(time.Now(), ctxClass(ctx), "%s before the request was sent: %v", ctxWhat(ctx), err)
		} else {
			st.abort(time.Now(), ClassConnection, "%v", err)
		}
		return
	}
	st.resp.reused = reused
	cn.mu.Lock()
	cn.st = st
	st.resp.TSendNs = i64(st.ns(time.Now()))
	cn.mu.Unlock()
	if err := writeAll(ctx, cn.fd, k.wire); err != nil {
		now := time.Now()
		cn.mu.Lock()
		if ctx.Err() != nil {
			st.abort(now, ctxClass(ctx), "%s while the request was written", ctxWhat(ctx))
		} else {
			st.abort(now, ClassConnection, "write request: %v", err)
		}
		cn.st = nil
		cn.mu.Unlock()
		c.discard(cn)
		k.retryable = reused && k.attempt == 0 && ctx.Err() == nil
		return
	}
	k.cn, k.reused, k.sentNs = cn, reused, i64(st.ns(time.Now()))
}

// result is the attempt's response with its write's return stamped (set here, on the goroutine
// that waits, not by send: the reactor may finish the stream before the writer runs again).
func (k *Call) result(st *stream) *Response {
	st.resp.TSentNs = k.sentNs
	return &st.resp
}

// Wait waits for the whole response (see Do).
func (k *Call) Wait() *Response {
	defer k.cancel()
	c, ctx := k.c, k.ctx
	for {
		st, cn := k.st, k.cn
		if cn == nil {
			if k.retryable {
				k.attempt++
				k.send()
				continue
			}
			return k.result(st)
		}
		select {
		case <-st.done:
		case <-ctx.Done():
			now := time.Now()
			cn.mu.Lock()
			sent := time.Duration(int64(now.Sub(k.req.Epoch)) - *st.resp.TSendNs)
			st.abort(now, ctxClass(ctx), "%s %v after the request was sent (%d response bytes received)", ctxWhat(ctx), sent.Round(time.Microsecond), st.resp.received)
			cn.st = nil
			cn.mu.Unlock()
			c.discard(cn)
			return k.result(st)
		}
		if k.reused && k.attempt == 0 && st.resp.received == 0 && st.resp.Err != nil && st.resp.Err.Class == ClassConnection && ctx.Err() == nil {
			c.discard(cn)
			k.attempt++
			k.send()
			continue
		}
		if st.reusable {
			c.put(cn)
		} else {
			c.discard(cn)
		}
		return k.result(st)
	}
}

func ctxClass(ctx context.Context) contract.ErrorClass {
	if context.Cause(ctx) == errRequestTimeout {
		return ClassTimeout
	}
	return ClassCancelled
}

func ctxWhat(ctx context.Context) string {
	if context.Cause(ctx) == errRequestTimeout {
		return "request timeout"
	}
	return "cancelled"
}

// wire renders the request head and body in one buffer (one write).
func (c *Client) wire(req Request) []byte {
	b := make([]byte, 0, 256+len(req.Body)+len(c.token))
	b = append(b, "POST "...)
	b = append(b, c.prefix...)
	b = append(b, req.Path...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, c.host...)
	b = append(b, "\r\nUser-Agent: qualkit\r\nContent-Type: application/json\r\nAccept: "...)
	if req.Stream {
		b = append(b, "text/event-stream"...)
	} else {
		b = append(b, "application/json"...)
	}
	b = append(b, "\r\nContent-Length: "...)
	b = strconv.AppendInt(b, int64(len(req.Body)), 10)
	if c.token != "" {
		b = append(b, "\r\nAuthorization: Bearer "...)
		b = append(b, c.token...)
	}
	b = append(b, "\r\n\r\n"...)
	return append(b, req.Body...)
}

// Prewarm opens connections until n are idle, so that a row released together does not wait
// for connects.
func (c *Client) Prewarm(ctx context.Context, n int) error {
	if c.conns != nil {
		n = min(n, cap(c.conns))
	}
	c.mu.Lock()
	need := n - len(c.idle)
	c.mu.Unlock()
	for range need {
		cn, err := c.dial(ctx)
		if err != nil {
			return err
		}
		c.put(cn)
	}
	return nil
}

// get returns an idle connection that is still open, or a new one.
func (c *Client) get(ctx context.Context) (*conn, bool, error) {
	for {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return nil, false, errors.New("client closed")
		}
		n := len(c.idle)
		if n == 0 && c.conns != nil && len(c.conns) == cap(c.conns) {
			c.mu.Unlock()
			select { // every connection is busy: wait for one to go idle or close
			case <-c.freed:
			case <-ctx.Done():
				return nil, false, fmt.Errorf("wait for one of %d connections: %w", cap(c.conns), context.Cause(ctx))
			}
			continue
		}
		if n == 0 {
			c.mu.Unlock()
			cn, err := c.dial(ctx)
			return cn, false, err
		}
		cn := c.idle[n-1]
		c.idle = c.idle[:n-1]
		c.mu.Unlock()
		cn.mu.Lock()
		dead := cn.dead
		cn.mu.Unlock()
		if dead || (time.Since(cn.idleSince) > probeIdleAfter && !alive(cn.fd)) {
			c.discard(cn)
			continue
		}
		return cn, true, nil
	}
}

// alive reports whether an idle connection has neither been closed by the server nor received
// stray bytes.
func alive(fd int) bool {
	var b [1]byte
	_, _, err := unix.Recvfrom(fd, b[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
	return errors.Is(err, unix.EAGAIN)
}

func (c *Client) put(cn *conn) {
	cn.idleSince = time.Now()
	c.mu.Lock()
	if !c.closed && len(c.idle) < c.opt.maxIdle {
		c.idle = append(c.idle, cn)
		c.mu.Unlock()
		c.signalFreed()
		return
	}
	c.mu.Unlock()
	c.discard(cn)
}

// discard closes a connection.
func (c *Client) discard(cn *conn) {
	cn.mu.Lock()
	released := false
	if !cn.closed {
		cn.r.remove(cn)
		unix.Close(cn.fd)
		cn.closed, cn.dead = true, true
		released = true
	}
	cn.mu.Unlock()
	if released && c.conns != nil {
		<-c.conns
		c.signalFreed()
	}
	c.mu.Lock()
	delete(c.open, cn)
	c.mu.Unlock()
}

// signalFreed wakes one request waiting for a connection.
func (c *Client) signalFreed() {
	select {
	case c.freed <- struct{}{}:
	default:
	}
}

// dial opens a new non-blocking TCP connection and registers it with a reactor (under
// WithMaxConns, first waiting for the limit to allow one more).
func (c *Client) dial(ctx context.Context) (*conn, error) {
	if c.conns != nil {
		select {
		case c.conns <- struct{}{}:
		case <-ctx.Done():
			return nil, fmt.Errorf("wait for one of %d connections: %w", cap(c.conns), context.Cause(ctx))
		}
	}
	cn, err := c.dialFD(ctx)
	if err != nil && c.conns != nil && !errors.Is(err, errDiscarded) {
		<-c.conns
		c.signalFreed()
	}
	return cn, err
}

// errDiscarded marks a dial that failed after its connection existed (discard gave its token
// back).
var errDiscarded = errors.New("connection discarded")

func (c *Client) dialFD(ctx context.Context) (*conn, error) {
	family, sa := unix.AF_INET6, unix.Sockaddr(&unix.SockaddrInet6{Port: int(c.addr.Port()), Addr: c.addr.Addr().As16()})
	if c.addr.Addr().Is4() {
		family, sa = unix.AF_INET, &unix.SockaddrInet4{Port: int(c.addr.Port()), Addr: c.addr.Addr().As4()}
	}
	fd, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("socket: %w", err)
	}
	unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
	err = unix.Connect(fd, sa)
	if errors.Is(err, unix.EINPROGRESS) {
		dctx, cancel := context.WithTimeout(ctx, DialTimeout)
		err = waitFD(dctx, fd, unix.POLLOUT)
		cancel()
		if err == nil {
			var soerr int
			soerr, err = unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ERROR)
			if err == nil && soerr != 0 {
				err = unix.Errno(soerr)
			}
		}
	}
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("connect %s: %w", c.host, err)
	}
	cn := &conn{fd: fd, r: c.reactors[int(c.next.Add(1))%len(c.reactors)]}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		unix.Close(fd)
		return nil, errors.New("client closed")
	}
	c.open[cn] = struct{}{}
	c.mu.Unlock()
	if err := cn.r.add(cn); err != nil {
		c.discard(cn) // gives its connection token back
		return nil, fmt.Errorf("register connection: %w (%w)", err, errDiscarded)
	}
	return cn, nil
}

// writeAll writes b to a non-blocking socket, waiting for room when the socket buffer is full.
func writeAll(ctx context.Context, fd int, b []byte) error {
	for len(b) > 0 {
		n, err := unix.SendmsgN(fd, b, nil, nil, unix.MSG_NOSIGNAL)
		if n > 0 {
			b = b[n:]
		}
		switch {
		case err == nil:
		case errors.Is(err, unix.EINTR):
		case errors.Is(err, unix.EAGAIN):
			if err := waitFD(ctx, fd, unix.POLLOUT); err != nil {
				return err
			}
		default:
			return err
		}
	}
	return nil
}

// waitFD waits until fd is ready for events, polling in short slices so that ctx can end the
// wait.
func waitFD(ctx context.Context, fd int, events int16) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		ms := 20
		if d, ok := ctx.Deadline(); ok {
			ms = min(ms, max(1, int(time.Until(d)/time.Millisecond)))
		}
		pfd := []unix.PollFd{{Fd: int32(fd), Events: events}}
		n, err := unix.Poll(pfd, ms)
		switch {
		case errors.Is(err, unix.EINTR):
		case err != nil:
			return err
		case n > 0:
			return nil
		}
	}
}

// Close cuts every request in flight (recorded as cancelled), closes every connection and stops
// the reader threads. It is idempotent.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	open := make([]*conn, 0, len(c.open))
	for cn := range c.open {
		open = append(open, cn)
	}
	c.idle = nil
	c.mu.Unlock()
	now := time.Now()
	for _, cn := range open {
		cn.mu.Lock()
		if st := cn.st; st != nil {
			st.abort(now, ClassCancelled, "client closed")
			cn.st = nil
		}
		cn.mu.Unlock()
		c.discard(cn)
	}
	for _, r := range c.reactors {
		r.close()
	}
	if c.unprocs != nil {
		c.unprocs()
	}
	return nil
}

// metricsURL is the server's Prometheus endpoint.
func (c *Client) metricsURL() string { return "http://" + c.host + c.prefix + "/metrics" }

// redact replaces a token in a message.
func redact(msg, token string) string {
	if token == "" {
		return msg
	}
	return strings.ReplaceAll(msg, token, "[REDACTED]")
}
