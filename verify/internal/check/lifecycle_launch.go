package check

import (
	"slices"
	"strconv"
	"strings"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/verify/internal/finding"
	"github.com/qualkit/qualkit/verify/internal/reason"
)

// The run markers the runner adds to the server's environment (runner/lifecycle MarkerRunID and
// MarkerOwner): the receipt id of the run, and the owner "pid:start ticks" of the qualrun process
// whose keeper launched the server.
const (
	markerRunID = "QUALKIT_RUN_ID" // not a contract value: the runner's marker variable
	markerOwner = "QUALKIT_OWNER"  // not a contract value: the runner's marker variable
)

// lifecycleEnvironment checks the launch environment a lifecycle record lists against the bound
// recipe and the receipt: the runner records the recipe's environment and the passthrough
// variables that were set, plus its two run markers (records before the markers existed have
// none), sorted by name, each with the sha256 of its value and the value itself unless the recipe
// redacts the name. A recipe variable has the recipe's value; QUALKIT_RUN_ID is the receipt's id.
// The mutation closure's session and trace shapes had an entry dropped, duplicated, renamed or
// given another value or digest verify.
func lifecycleEnvironment(c *finding.Collector, path string, l *contract.LifecycleRecordDoc, r *contract.LaunchRecipeDoc, receiptID string) {
	la := l.Launch
	if la == nil {
		return
	}
	env := la.Environment
	markers := 0
	for i, e := range env {
		at := func(m string) string { return finding.Pointer("launch", "environment", i, m) } // not a contract value: the lifecycle record's member name
		if i > 0 && e.Name <= env[i-1].Name {
			c.Add(path, at("name"), reason.ErrLifecycleMismatch, "environment entry %s after %s: the runner lists each variable once, sorted by name", e.Name, env[i-1].Name)
		}
		switch {
		case e.Redacted && e.Value != nil:
			c.Add(path, at("value"), reason.ErrLifecycleMismatch, "%s is redacted but records a value", e.Name)
		case !e.Redacted && e.Value == nil:
			c.Add(path, at("value"), reason.ErrLifecycleMismatch, "%s is not redacted but records no value", e.Name)
		case e.Value != nil && e.Digest != sha256Digest([]byte(*e.Value)):
			c.Add(path, at("digest"), reason.ErrLifecycleMismatch, "%s has digest %s, its value hashes to %s", e.Name, e.Digest, sha256Digest([]byte(*e.Value)))
		}
		switch e.Name {
		case markerRunID:
			markers++
			if e.Value != nil && receiptID != "" && *e.Value != receiptID {
				c.Add(path, at("value"), reason.ErrLifecycleMismatch, "%s is %s, the receipt's id is %s", e.Name, *e.Value, receiptID)
			}
			continue
		case markerOwner:
			markers++
			if e.Value != nil {
				lifecycleOwner(c, path, at("value"), l, *e.Value)
			}
			continue
		}
		if r == nil {
			continue
		}
		v, declared := r.Environment[e.Name]
		switch {
		case !declared && !slices.Contains(r.EnvironmentPassthrough, e.Name):
			c.Add(path, at("name"), reason.ErrLifecycleMismatch, "%s is in the server's environment, but the recipe neither sets nor passes it through", e.Name)
		case declared && e.Value != nil && *e.Value != v:
			c.Add(path, at("value"), reason.ErrLifecycleMismatch, "%s is %q, the recipe sets %q", e.Name, *e.Value, v)
		case e.Redacted != r.RedactsEnv(e.Name):
			c.Add(path, at("redacted"), reason.ErrLifecycleMismatch, "%s redacted %t: the recipe redacts it %t", e.Name, e.Redacted, r.RedactsEnv(e.Name))
		}
	}
	if markers == 1 {
		c.Add(path, "/launch/environment", reason.ErrLifecycleMismatch, "one run marker of %s and %s: the runner sets both", markerRunID, markerOwner)
	}
	if r == nil {
		return
	}
	for name := range r.Environment {
		if !slices.ContainsFunc(env, func(e contract.EnvEntry) bool { return e.Name == name }) {
			c.Add(path, "/launch/environment", reason.ErrLifecycleMismatch, "the recipe sets %s, the server's environment lacks it", name)
		}
	}
}

// lifecycleOwner checks the owner marker "pid:start ticks": the owner is the parent of the
// server's leader where the processes at SIGTERM list the leader.
func lifecycleOwner(c *finding.Collector, path, at string, l *contract.LifecycleRecordDoc, owner string) {
	p, t, ok := strings.Cut(owner, ":")
	pid, err1 := strconv.ParseInt(p, 10, 64)
	_, err2 := strconv.ParseInt(t, 10, 64)
	if !ok || err1 != nil || err2 != nil || pid < 2 {
		c.Add(path, at, reason.ErrLifecycleImplausible, "owner marker %q is not pid:start-ticks", owner)
		return
	}
	if l.Shutdown == nil || l.Launch == nil {
		return
	}
	for _, g := range l.Shutdown.ProcessesAtSignal {
		if g.PID == l.Launch.PID && g.PPID != pid {
			c.Add(path, at, reason.ErrLifecycleImplausible, "owner pid %d, but the server's leader %d is the child of %d at SIGTERM", pid, g.PID, g.PPID)
		}
	}
}

// processesAtSignal checks the owned tree at SIGTERM as the runner lists it: sorted by pid, each
// once, the leader among them and in its own group (not escaped). The other processes' parents
// are not bound: a descendant whose parent exited is re-parented. An empty list is not refused:
// records before it existed have none.
func processesAtSignal(c *finding.Collector, path string, l *contract.LifecycleRecordDoc) {
	sd, la := l.Shutdown, l.Launch
	if sd == nil || la == nil || len(sd.ProcessesAtSignal) == 0 {
		return
	}
	ps := sd.ProcessesAtSignal
	leader := false
	for i, g := range ps {
		at := func(m string) string { return finding.Pointer("shutdown", "processes_at_signal", i, m) }
		if i > 0 && g.PID <= ps[i-1].PID {
			c.Add(path, at("pid"), reason.ErrLifecycleImplausible, "process %d after %d: the runner lists the tree sorted by pid, each once", g.PID, ps[i-1].PID)
		}
		if g.PID == la.PID {
			leader = true
			if g.Escaped {
				c.Add(path, at("escaped"), reason.ErrLifecycleImplausible, "the leader %d escaped its own process group", g.PID)
			}
		}
	}
	if !leader {
		c.Add(path, "/shutdown/processes_at_signal", reason.ErrLifecycleImplausible, "the processes at SIGTERM do not include the server's leader %d", la.PID)
	}
}
