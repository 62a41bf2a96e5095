package load

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/qualkit/qualkit/schemas/contract"
)

// The cold regime's reset hook (docs/caching.md "Reset"): when the launch recipe declares
// cache_reset (vLLM's POST /reset_prefix_cache in dev mode, SGLang's /flush_cache, qualsim's
// /reset_prefix_cache), Run POSTs it, with an empty body, before every cold row's first request
// (its warmups included), on a connection of its own, and records the answer in the row's cache
// object. A reset that does not answer 2xx is recorded with its status and error; it does not
// stop the row: the nonces still make every prompt unique, and the row's observed regime still
// says what the server reported.

// ResetTimeout bounds one cache reset request.
const ResetTimeout = 10 * time.Second

// resetCache POSTs the reset endpoint and returns what happened.
func (r *runner) resetCache(ctx context.Context) *contract.CacheResetOutcome {
	path := r.plan.CacheResetPath
	out := &contract.CacheResetOutcome{Path: path, TNs: int64(time.Since(r.plan.Epoch))}
	fail := func(format string, args ...any) *contract.CacheResetOutcome {
		msg := clip(redact(fmt.Sprintf(format, args...), r.client.token), 512)
		out.Error = &msg
		return out
	}
	ctx, cancel := context.WithTimeout(ctx, ResetTimeout)
	defer cancel()
	tr := &http.Transport{DisableKeepAlives: true, Proxy: nil}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+r.client.host+r.client.prefix+path, http.NoBody)
	if err != nil {
		return fail("reset %s: %v", path, err)
	}
	if r.client.token != "" {
		req.Header.Set("Authorization", "Bearer "+r.client.token)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fail("reset %s: %v", path, err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, MaxErrorBodyBytes))
	code := int64(resp.StatusCode)
	out.StatusCode = &code
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fail("reset %s: HTTP %d: the server did not reset its prefix cache", path, resp.StatusCode)
	}
	return out
}
