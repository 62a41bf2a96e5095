package oci

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/errcode"
	"oras.land/oras-go/v2/registry/remote/retry"
)

// Transfer bounds one pull or publish in time.
type Transfer struct {
	// Timeout is the overall deadline of one pull or publish (every request, every byte); 0: none.
	Timeout time.Duration
	// MinRate is the minimum transfer rate of a request, in bytes per second, averaged over each
	// Window of the request (response headers included): a request that moves fewer bytes than
	// MinRate x Window in a window is cancelled (ErrTooSlow). 0: no minimum.
	MinRate int64
	// Window is the span MinRate is averaged over.
	Window time.Duration
}

// DefaultTransfer: the whole exchange within 10 minutes, at least 64 KiB/s over every 30 s.
var DefaultTransfer = Transfer{Timeout: 10 * time.Minute, MinRate: 64 << 10, Window: 30 * time.Second}

var (
	// ErrNetPolicy: the registry sent the client where the network rules do not let it go (a
	// redirect, a token realm or an upload location over plain HTTP to a host that is not
	// loopback, or to any host over plain HTTP when the registry itself is not loopback). The
	// request is never sent.
	ErrNetPolicy = errors.New("registry traffic refused")
	// ErrDeadline: the pull or publish ran past Transfer.Timeout.
	ErrDeadline = errors.New("registry transfer past its deadline")
	// ErrTooSlow: a request moved fewer bytes than Transfer.MinRate over a Transfer.Window.
	ErrTooSlow = errors.New("registry transfer below the minimum rate")
)

// bound applies the overall deadline to ctx.
func (t Transfer) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if t.Timeout <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeoutCause(ctx, t.Timeout, fmt.Errorf("%w (%s)", ErrDeadline, t.Timeout))
}

// causeOf returns err (its registry error text clipped: registryText), or, when ctx ended with one of this package's causes (the deadline), an
// error wrapping that cause.
func causeOf(ctx context.Context, err error) error {
	err = registryText(err)
	if err == nil || ctx.Err() == nil {
		return err
	}
	if c := context.Cause(ctx); errors.Is(c, ErrDeadline) && !errors.Is(err, ErrDeadline) {
		return fmt.Errorf("%w: %v", c, err)
	}
	return err
}

// client is the HTTP client of one repository: every request, redirects, token realms and upload
// locations included, goes through guard first.
func client(r Ref, t Transfer) *auth.Client {
	g := &guard{
		base:     http.DefaultTransport.(*http.Transport).Clone(),
		registry: r.Host(),
		loopback: isLoopback(r.Host()),
		t:        t,
	}
	if t.Window > 0 {
		// Headers that do not come within a window are a stalled request.
		g.base.(*http.Transport).ResponseHeaderTimeout = t.Window
	}
	return &auth.Client{
		Client: &http.Client{
			Transport: retry.NewTransport(g),
			CheckRedirect: func(req *http.Request, via []*http.Request) error {
				if len(via) >= 10 {
					return fmt.Errorf("%w: more than 10 redirects", ErrNetPolicy)
				}
				return g.allowed(req.URL, "redirect")
			},
		},
		Cache: auth.NewCache(),
	}
}

var _ remote.Client = (*auth.Client)(nil)

// guard is the round tripper that enforces the network rules and the minimum rate.
type guard struct {
	base     http.RoundTripper
	registry string // host[:port] of the registry, as oras addresses it
	loopback bool
	t        Transfer
}

// allowed applies the network rules to a URL the client is about to request: HTTPS to any host;
// plain HTTP only to a loopback host, and only when the registry itself is loopback (a loopback
// registry is the one spoken to over plain HTTP). what names the request in the error.
func (g *guard) allowed(u *url.URL, what string) error {
	switch {
	case u.Scheme == "https":
		return nil
	case u.Scheme == "http" && g.loopback && isLoopback(u.Host):
		return nil
	case u.Scheme == "http" && g.loopback:
		return fmt.Errorf("%w: %s to http://%s: plain HTTP goes only to loopback (127.0.0.0/8, ::1, localhost); this host needs HTTPS", ErrNetPolicy, what, clip(u.Host))
	case u.Scheme == "http":
		return fmt.Errorf("%w: %s to http://%s: the registry %s is not loopback, so plain HTTP is refused; HTTPS only", ErrNetPolicy, what, clip(u.Host), g.registry)
	}
	return fmt.Errorf("%w: %s with scheme %s: HTTPS only (plain HTTP to loopback for a loopback registry)", ErrNetPolicy, what, clip(u.Scheme))
}

func (g *guard) RoundTrip(req *http.Request) (*http.Response, error) {
	what := "request"
	if req.URL.Host != g.registry {
		what = "request to another host (a redirect, token realm or upload location)"
	}
	if err := g.allowed(req.URL, what); err != nil {
		return nil, err
	}
	if req.URL.Host != g.registry && req.Header.Get("Authorization") != "" {
		// A token or credential is for the registry that asked for it: never sent to another host
		// (net/http forwards it on a redirect to the same host name on another port, or to a
		// subdomain).
		req = req.Clone(req.Context())
		req.Header.Del("Authorization")
	}
	if g.t.MinRate <= 0 || g.t.Window <= 0 {
		return g.base.RoundTrip(req)
	}
	ctx, cancel := context.WithCancelCause(req.Context())
	w := &watch{need: int64(float64(g.t.MinRate) * g.t.Window.Seconds()), rate: g.t.MinRate, window: g.t.Window, cancel: cancel, ctx: ctx}
	if w.need <= 0 {
		w.need = 1
	}
	req = req.WithContext(ctx)
	if req.Body != nil && req.Body != http.NoBody {
		req.Body = &countBody{rc: req.Body, w: w, closeStops: false}
	}
	w.start()
	resp, err := g.base.RoundTrip(req)
	if err != nil {
		w.stop()
		if c := context.Cause(ctx); errors.Is(c, ErrTooSlow) {
			return nil, c
		}
		return nil, err
	}
	resp.Body = &countBody{rc: resp.Body, w: w, closeStops: true}
	return resp, nil
}

// watch cancels a request that moves fewer than need bytes in a window.
type watch struct {
	mu     sync.Mutex
	n, at  int64 // bytes moved; bytes moved at the start of the window
	need   int64 // bytes per window
	rate   int64 // bytes per second, for the message
	window time.Duration
	timer  *time.Timer
	done   bool
	cancel context.CancelCauseFunc
	ctx    context.Context
}

func (w *watch) start() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.timer = time.AfterFunc(w.window, w.tick)
}

func (w *watch) tick() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		return
	}
	if moved := w.n - w.at; moved < w.need {
		w.done = true
		w.cancel(fmt.Errorf("%w: %d bytes in %s, below %d bytes/s", ErrTooSlow, moved, w.window, w.rate))
		return
	}
	w.at = w.n
	w.timer.Reset(w.window)
}

func (w *watch) add(n int) {
	w.mu.Lock()
	w.n += int64(n)
	w.mu.Unlock()
}

func (w *watch) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.done = true
		w.timer.Stop()
		w.cancel(context.Canceled)
	}
}

// countBody counts the bytes of a request or response body for its watch; the response body's
// end (EOF, an error or Close) ends the watch. An error after the watch cancelled the request is
// reported as ErrTooSlow.
type countBody struct {
	rc         io.ReadCloser
	w          *watch
	closeStops bool
}

func (c *countBody) Read(p []byte) (int, error) {
	n, err := c.rc.Read(p)
	c.w.add(n)
	if err != nil {
		if cause := context.Cause(c.w.ctx); errors.Is(cause, ErrTooSlow) {
			err = cause
		}
		if c.closeStops {
			c.w.stop()
		}
	}
	return n, err
}

func (c *countBody) Close() error {
	err := c.rc.Close()
	if c.closeStops {
		c.w.stop()
	}
	return err
}

func isLoopback(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// clip quotes a string the registry sent for a message: Go-quoted (no control byte reaches a
// terminal raw), at most 64 bytes of it, with its length when longer.
func clip(s string) string { return clipN(s, 64) }

// clipN is clip with a bound of most bytes.
func clipN(s string, most int) string {
	if len(s) <= most {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprintf("%q... (%d bytes)", s[:most], len(s))
}

// ParseRate parses a transfer rate in bytes per second: a whole number with an optional unit (B,
// KiB, MiB, GiB; KB, MB, GB as powers of 1000) and an optional "/s": "65536", "64KiB", "1MiB/s".
// "0" is no minimum.
func ParseRate(s string) (int64, error) {
	v := strings.TrimSuffix(strings.TrimSpace(s), "/s")
	units := []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"KB", 1000}, {"MB", 1000 * 1000}, {"GB", 1000 * 1000 * 1000}, {"B", 1}}
	mult := int64(1)
	for _, u := range units {
		if n, ok := strings.CutSuffix(v, u.suffix); ok {
			v, mult = n, u.mult
			break
		}
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n < 0 || n > (1<<40)/mult {
		return 0, fmt.Errorf("rate %s: want a whole number of bytes per second, with an optional KiB, MiB, GiB, KB, MB or GB and /s", clip(s))
	}
	return n * mult, nil
}

// FormatRate writes a rate as ParseRate reads it, in the largest binary unit that divides it.
func FormatRate(n int64) string {
	switch {
	case n == 0:
		return "0"
	case n%(1<<30) == 0:
		return fmt.Sprintf("%dGiB", n>>30)
	case n%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", n>>20)
	case n%(1<<10) == 0:
		return fmt.Sprintf("%dKiB", n>>10)
	}
	return strconv.FormatInt(n, 10)
}

// quiet keeps an error's chain (errors.Is, errors.As) under a message of its own.
type quiet struct {
	msg string
	err error
}

func (q *quiet) Error() string { return q.msg }
func (q *quiet) Unwrap() error { return q.err }

// registryText replaces, in err's message, the text of a registry's error response (the codes and
// messages of its JSON body, up to 8 KiB the registry chose, and the URL it was sent to) by a
// clipped, quoted form: the status, the URL at most 256 bytes, each code and message at most 64
// bytes, all Go-quoted.
func registryText(err error) error {
	var er *errcode.ErrorResponse
	if err == nil || !errors.As(err, &er) {
		return err
	}
	u := ""
	if er.URL != nil {
		u = er.URL.Scheme + "://" + er.URL.Host + er.URL.Path
	}
	msg := fmt.Sprintf("%s %s: response status code %d", er.Method, clipN(u, 256), er.StatusCode)
	for i, e := range er.Errors {
		if i == 4 {
			msg += fmt.Sprintf(" (and %d more errors)", len(er.Errors)-i)
			break
		}
		msg += fmt.Sprintf("; code %s, message %s", clip(e.Code), clip(e.Message))
	}
	return &quiet{msg: strings.Replace(err.Error(), er.Error(), msg, 1), err: err}
}
