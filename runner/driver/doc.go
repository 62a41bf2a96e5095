// Package driver runs evidence drivers: numerical oracle workers (a reference implementation
// computing next-token logits, path or layer attribution) that must run offline, start only when
// told, end in bounded time, leave nothing behind and produce self-hashed evidence. See
// docs/drivers.md.
//
// Run executes one worker:
//
//  1. Hash-bound inputs: the executable and the script are opened O_NOFOLLOW and hashed from the
//     descriptor; the script's bytes are copied into a sealed memfd. Pinned digests (the script's
//     always, the executable's when given) and the request and model digests are compared before
//     anything starts: a mismatch is refused and no start gate is ever created.
//  2. Isolation: a guard process (this binary re-executed with GuardArg, see GuardMain) starts in
//     a new user namespace (this uid mapped to root) and a new network namespace, in its own
//     process group and, where the host allows, its own cgroup v2 (runner/lifecycle.Group). It
//     brings loopback up and probes: interfaces exactly [lo], 192.0.2.1 unreachable, a listener on
//     127.0.0.1:0 works, and a listener the runner holds open on the host's loopback is not
//     reachable (the runner also counts connections to it for the whole run).
//  3. The start gate: only after the probe passed and all hashing is done, the runner creates
//     <workspace>/start-gate exclusively (mode 0600, "go\n", fsynced) and tells the guard to go;
//     the guard checks the gate, re-hashes both descriptors, drops every capability and execs the
//     worker as execve("/proc/self/fd/3", [executable, "/proc/self/fd/4", args...]). The worker
//     refuses to start without a valid gate.
//  4. A closed environment (ClosedEnvironment): nothing inherited, offline flags set, secrets never passed.
//  5. A finite runtime: a monotonic deadline from the start, then SIGTERM to the group, a grace
//     period, SIGKILL to everything left (forced); then residue checks (any process of the group,
//     its cgroup or its reparented descendants still alive fails the run and is killed).
//
// A mechanism the host lacks (user namespaces, network namespaces, memfd or /proc/self/fd exec)
// is an *UnsupportedError naming it: the worker never runs without it.
package driver
