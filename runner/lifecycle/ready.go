package lifecycle

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/qualkit/qualkit/schemas/contract"
)

// Readiness errors.
var (
	// ErrNotReady: the declared model was not listed before the startup deadline.
	ErrNotReady = errors.New("server not ready before the startup deadline")
	// ErrExitedEarly: the server exited while readiness was awaited.
	ErrExitedEarly = errors.New("server exited before it was ready")
	// ErrListenerNotOwned: the listening socket on the port is not held by the owned tree.
	ErrListenerNotOwned = errors.New("listener not owned by the server")
	// ErrUnauthorized: the server answered a readiness probe with HTTP 401 or 403; waiting cannot
	// change that, so readiness fails at once.
	ErrUnauthorized = errors.New("server refused the readiness probe's credentials")
	// ErrToken: the recipe declares auth, and qualrun's environment has no usable token.
	ErrToken = errors.New("bearer token unavailable")
)

// BearerToken returns the token a recipe's auth names, read with lookup (os.LookupEnv when nil),
// or "" for a recipe without auth. An unset or empty variable, or a value that cannot go in an
// HTTP header (anything but visible ASCII), is an error wrapping ErrToken that names the variable
// and never quotes its value.
func BearerToken(r *contract.LaunchRecipeDoc, lookup func(string) (string, bool)) (string, error) {
	name := r.TokenEnv()
	if name == "" {
		return "", nil
	}
	if r.Auth.Scheme != "bearer" {
		return "", fmt.Errorf("%w: auth scheme %q: only bearer is supported", ErrToken, r.Auth.Scheme)
	}
	if lookup == nil {
		lookup = os.LookupEnv
	}
	v, ok := lookup(name)
	switch {
	case !ok:
		return "", fmt.Errorf("%w: the launch recipe's auth.token_env names %s, which is not set in qualrun's environment; export the server's API key in %s and run again", ErrToken, name, name)
	case v == "":
		return "", fmt.Errorf("%w: the launch recipe's auth.token_env names %s, which is empty in qualrun's environment; export the server's API key in %s and run again", ErrToken, name, name)
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x21 || c > 0x7e {
			return "", fmt.Errorf("%w: the value of %s (%d bytes) has a byte that is not visible ASCII at offset %d, so it cannot be sent as a bearer token", ErrToken, name, len(v), i)
		}
	}
	return v, nil
}

// Redact replaces every occurrence of token in msg with [REDACTED] ("" changes nothing).
func Redact(msg, token string) string {
	if token == "" {
		return msg
	}
	return strings.ReplaceAll(msg, token, "[REDACTED]")
}

// MaxAnswerQuote bounds how much of a refusing server's error message a readiness failure quotes.
const MaxAnswerQuote = 256

type modelList struct {
	Data []struct {
		ID string `json:"id"`
	} `json:"data"`
}

// probe asks GET /v1/models once and reports whether the model id is listed, and if not, why (with
// the token, if any, redacted) and the HTTP status (0 without an answer).
func (s *Server) probe(ctx context.Context, client *http.Client, timeout time.Duration, token string) (bool, string, int) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.BaseURL()+s.recipe.Readiness.Path, nil)
	if err != nil {
		return false, Redact(err.Error(), token), 0
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			// No answer in time: say which limit cut the probe, not "context deadline exceeded".
			if pt := s.recipe.Readiness.ProbeTimeoutMs; timeout < time.Duration(pt)*time.Millisecond {
				return false, fmt.Sprintf("no answer to GET %s before the startup deadline (startup_timeout_seconds %g)", s.recipe.Readiness.Path, s.recipe.StartupTimeoutSeconds), 0
			}
			return false, fmt.Sprintf("no answer to GET %s within the probe timeout of %d ms (readiness.probe_timeout_ms; raise it for a server slow to answer)",
				s.recipe.Readiness.Path, s.recipe.Readiness.ProbeTimeoutMs), 0
		}
		return false, Redact(err.Error(), token), 0
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxModelsBody+1))
	if err != nil {
		return false, Redact(err.Error(), token), resp.StatusCode
	}
	if resp.StatusCode != http.StatusOK {
		why := resp.Status
		if !strings.HasPrefix(why, strconv.Itoa(resp.StatusCode)) {
			why = strconv.Itoa(resp.StatusCode)
		}
		why = "HTTP " + Redact(why, token)
		if msg := errorMessage(body); msg != "" {
			why += ": " + quote(Redact(msg, token), MaxAnswerQuote)
		}
		return false, why, resp.StatusCode
	}
	if len(body) > MaxModelsBody {
		return false, "response larger than 1 MiB", resp.StatusCode
	}
	var ml modelList
	if err := json.Unmarshal(body, &ml); err != nil {
		return false, Redact("malformed model list: "+err.Error(), token), resp.StatusCode
	}
	var ids []string
	for _, m := range ml.Data {
		if m.ID == s.recipe.ModelID {
			return true, "", resp.StatusCode
		}
		ids = append(ids, Redact(m.ID, token))
	}
	return false, fmt.Sprintf("model %q not listed (listed: %q)", s.recipe.ModelID, ids), resp.StatusCode
}

// errorMessage finds the message of an error answer: OpenAI's {"error":{"message":...}}, the
// {"error":"..."} of vLLM's API-key check, {"message":...} or {"detail":...}, else the body itself
// when it is text.
func errorMessage(body []byte) string {
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Detail  string          `json:"detail"`
	}
	if json.Unmarshal(body, &v) == nil {
		var nested struct {
			Message string `json:"message"`
		}
		var flat string
		switch {
		case json.Unmarshal(v.Error, &nested) == nil && nested.Message != "":
			return nested.Message
		case json.Unmarshal(v.Error, &flat) == nil && flat != "":
			return flat
		case v.Message != "":
			return v.Message
		case v.Detail != "":
			return v.Detail
		}
	}
	if !utf8.Valid(body) {
		return ""
	}
	return strings.TrimSpace(string(body))
}

// quote clips s to n bytes (on a rune boundary) and quotes it.
func quote(s string, n int) string {
	if len(s) > n {
		i := n
		for i > 0 && !utf8.RuneStart(s[i]) {
			i--
		}
		s = s[:i] + "..."
	}
	return strconv.Quote(s)
}

// WaitReady polls GET /v1/models until the recipe's model id is listed, the leader exits (at once,
// with its exit status and the log tail), or the startup deadline passes. The deadline runs on the
// monotonic clock from the launch and is never extended; each probe is bounded by the recipe's
// probe timeout and by what is left of the deadline.
func (s *Server) WaitReady(ctx context.Context) error {
	r := s.recipe
	start := time.Now()
	launched := s.opts.Epoch.Add(time.Duration(s.record.Launch.TStartNs))
	deadline := launched.Add(time.Duration(r.StartupTimeoutSeconds * float64(time.Second)))
	rec := &contract.ReadinessEvidence{Path: r.Readiness.Path, ModelID: r.ModelID, DeadlineMs: r.StartupTimeoutSeconds * 1000}
	s.record.Readiness = rec
	transport := &http.Transport{DisableKeepAlives: true, Proxy: nil}
	defer transport.CloseIdleConnections()
	client := &http.Client{Transport: transport, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	poll := time.Duration(r.Readiness.PollIntervalMs) * time.Millisecond
	probeTimeout := time.Duration(r.Readiness.ProbeTimeoutMs) * time.Millisecond
	last := ""
	finish := func(now time.Time) { rec.ElapsedMs = float64(now.Sub(launched)) / float64(time.Millisecond) }
	token, err := BearerToken(r, s.opts.LookupEnv)
	if err != nil {
		finish(time.Now())
		return err
	}
	for {
		select {
		case <-s.exited:
			finish(time.Now())
			status := s.exitStatus()
			rec.ChildExit = &status
			s.waitLog(LogDrain)
			return fmt.Errorf("%w: %s after %.0f ms; log tail:\n%s", ErrExitedEarly, status, rec.ElapsedMs, Redact(tail(s.opts.LogPath, LogTailBytes), token))
		case <-ctx.Done():
			finish(time.Now())
			return ctx.Err()
		default:
		}
		left := time.Until(deadline)
		if left <= 0 {
			finish(time.Now())
			return fmt.Errorf("%w: %g s passed after %d probes; last answer: %s", ErrNotReady, r.StartupTimeoutSeconds, rec.Probes, last)
		}
		rec.Probes++
		ok, why, status := s.probe(ctx, client, min(probeTimeout, left), token)
		now := time.Now()
		if ok {
			// The leader must still be alive: an answer after it exited came from someone else.
			select {
			case <-s.exited:
				continue
			default:
			}
			finish(now)
			rec.Ready = true
			t := s.offset(now)
			rec.TReadyNs = &t
			s.opts.Logger.Debug("ready", "probes", rec.Probes, "waited", now.Sub(start))
			return nil
		}
		if status == http.StatusUnauthorized || status == http.StatusForbidden {
			// The leader must still be alive: a refusal after it exited came from someone else.
			select {
			case <-s.exited:
				continue
			default:
			}
			finish(now)
			hint := "the server requires authentication: declare auth {\"scheme\": \"bearer\", \"token_env\": NAME} in the launch recipe and export the key in NAME"
			if name := r.TokenEnv(); name != "" {
				hint = fmt.Sprintf("the bearer token from %s was sent: check that %s holds the key the server expects", name, name)
			}
			return fmt.Errorf("%w: GET %s answered %s (probe %d, %.0f ms after launch); %s", ErrUnauthorized, r.Readiness.Path, why, rec.Probes, rec.ElapsedMs, hint)
		}
		// A probe cut short by the startup deadline got no answer: keep the last answer the
		// server did give, which says why it was not ready.
		if last == "" || time.Until(deadline) > 0 {
			last = why
		}
		wait := time.NewTimer(min(poll, max(time.Until(deadline), 0)))
		select {
		case <-wait.C:
		case <-s.exited:
			wait.Stop()
		case <-ctx.Done():
			wait.Stop()
		}
	}
}

// CheckListener proves the LISTEN socket(s) on the server's port belong to the owned tree: every
// listening inode on the port must be held open by a process of the server (so a readiness answer
// from an unrelated process, or a listener that escaped, fails before any traffic).
func (s *Server) CheckListener() error {
	l := &contract.Listener{Inodes: []int64{}, OwnerPIDs: []int64{}}
	s.record.Listener = l
	inodes, err := listeners(s.fs, s.port)
	if err != nil {
		return err
	}
	for _, in := range inodes {
		l.Inodes = append(l.Inodes, int64(in))
	}
	if len(inodes) == 0 {
		return fmt.Errorf("%w: nothing listens on port %d after readiness", ErrListenerNotOwned, s.port)
	}
	owned, err := s.liveOwned()
	if err != nil {
		return err
	}
	held := map[uint64]int{}
	for pid := range owned {
		for in := range socketInodes(s.fs, pid) {
			held[in] = pid
		}
	}
	var pids []int
	seen := map[int]bool{}
	var stray []uint64
	for _, in := range inodes {
		pid, ok := held[in]
		if !ok {
			stray = append(stray, in)
			continue
		}
		if !seen[pid] {
			seen[pid] = true
			pids = append(pids, pid)
		}
	}
	sort.Ints(pids)
	for _, p := range pids {
		l.OwnerPIDs = append(l.OwnerPIDs, int64(p))
	}
	if len(stray) > 0 {
		return fmt.Errorf("%w: LISTEN socket inode(s) %v on port %d are held by no process of the server", ErrListenerNotOwned, stray, s.port)
	}
	l.Owned = true
	return nil
}
