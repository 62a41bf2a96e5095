// Package lifecycle owns one server process group per campaign: it launches the server from a
// launch recipe's argv vector in a new process group (and a cgroup where the host allows), binds
// its identity, waits for bounded readiness on /v1/models, proves the listening socket belongs to
// the owned tree, shuts the group down gracefully (or forcibly, recorded as a failure) and finds
// and kills residue: processes or listeners left behind, including descendants that escaped the
// group with setsid or a double fork. Everything it observes becomes a lifecycle record
// (qualkit.lifecycle-record.v1); the verdict requires all six conditions of docs/lifecycle.md.
// Start is the one start sequence (Launch, WaitReady, CheckListener) and Shutdown the one end
// (stop, residue, record): a campaign and `qualrun serve` both use them.
//
// Ownership survives the runner's death: with Options.Keeper, the runner re-executes itself as a
// keeper (KeeperMain) that stops the server if the runner dies, even by SIGKILL; every server
// carries run markers (MarkerRunID, MarkerOwner) and lives in an owner-named cgroup, so that
// FindLeftovers can name what a dead run left behind and Leftover.Reap remove it.
//
// One runner process owns at most one server at a time: the runner is a child subreaper, so
// orphaned descendants are reparented to it and attributed to the server that is running.
package lifecycle
