package lifecycle

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"time"

	"github.com/qualkit/qualkit/schemas"
)

// Readiness errors.
var (
	// ErrNotReady: the declared model was not listed before the startup deadline.
	ErrNotReady = errors.New("server not ready before the startup deadline")
	// ErrExitedEarly: the server exited while readiness was awaited.
	ErrExitedEarly = errors.New("server exited before it was ready")
	// ErrListenerNotOwned: the listening socket on the port is not held by the owned tree.
	ErrListenerNotOwned = errors.New("listener not owned by the server")
)

type modelList struct {
	Data []struct {
		ID string `json:"id"`
	} `json:"data"`
}

// probe asks GET /v1/models once and reports whether the model id is listed.
func (s *Server) probe(ctx context.Context, client *http.Client, timeout time.Duration) (bool, string) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.BaseURL()+s.recipe.Readiness.Path, nil)
	if err != nil {
		return false, err.Error()
	}
	resp, err := client.Do(req)
	if err != nil {
		return false, err.Error()
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxModelsBody+1))
	if err != nil {
		return false, err.Error()
	}
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Sprintf("HTTP %d", resp.StatusCode)
	}
	if len(body) > MaxModelsBody {
		return false, "response larger than 1 MiB"
	}
	var ml modelList
	if err := json.Unmarshal(body, &ml); err != nil {
		return false, "malformed model list: " + err.Error()
	}
	var ids []string
	for _, m := range ml.Data {
		if m.ID == s.recipe.ModelID {
			return true, ""
		}
		ids = append(ids, m.ID)
	}
	return false, fmt.Sprintf("model %q not listed (listed: %q)", s.recipe.ModelID, ids)
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
	rec := &schemas.ReadinessEvidence{Path: r.Readiness.Path, ModelID: r.ModelID, DeadlineMs: r.StartupTimeoutSeconds * 1000}
	s.record.Readiness = rec
	transport := &http.Transport{DisableKeepAlives: true, Proxy: nil}
	defer transport.CloseIdleConnections()
	client := &http.Client{Transport: transport, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	poll := time.Duration(r.Readiness.PollIntervalMs) * time.Millisecond
	probeTimeout := time.Duration(r.Readiness.ProbeTimeoutMs) * time.Millisecond
	last := ""
	finish := func(now time.Time) { rec.ElapsedMs = float64(now.Sub(launched)) / float64(time.Millisecond) }
	for {
		select {
		case <-s.exited:
			finish(time.Now())
			status := s.exitStatus()
			rec.ChildExit = &status
			return fmt.Errorf("%w: %s after %.0f ms; log tail:\n%s", ErrExitedEarly, status, rec.ElapsedMs, tail(s.opts.LogPath, LogTailBytes))
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
		ok, why := s.probe(ctx, client, min(probeTimeout, left))
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
	l := &schemas.Listener{Inodes: []int64{}, OwnerPIDs: []int64{}}
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
