// Package exitcode is the one table that maps qualkit CLI errors to process exit codes.
// docs/exit-codes.md documents it; TestTableMatchesDocs keeps the two equal.
package exitcode

import (
	"errors"
)

// Sentinel errors the CLIs wrap; Code maps them to exit codes.
var (
	// ErrRejected: the input was read and is invalid (a schema violation, a failed check).
	ErrRejected = errors.New("rejected") // not a contract value: an error message
	// ErrUsage: the command line is wrong (unknown flag, missing argument, unreadable path).
	ErrUsage = errors.New("usage error")
	// ErrInterrupted: SIGINT, SIGTERM, SIGHUP or SIGQUIT stopped the command.
	ErrInterrupted = errors.New("interrupted") // not a contract value: an error message
)

// Exit codes.
const (
	OK          = 0
	Rejected    = 1
	Usage       = 2
	Internal    = 3
	Interrupted = 130
)

// Table lists every exit code with its meaning, in order. Retry says whether a fleet engine
// (Slurm, Kubernetes) runs a plan row again after qualrun run exits with the code: an environment
// problem or an interruption (preemption, a drained node) may pass on another attempt; a rejected
// run is the row's answer (retrying would hide a failure) and a usage error repeats on every
// attempt. docs/fleet.md lists it; TestRetryMatchesFleetDocs keeps the two equal.
var Table = []struct {
	Code    int
	Err     error
	Meaning string
	Retry   bool
}{
	{OK, nil, "success: every input is valid, every check passed", false},
	{Rejected, ErrRejected, "rejected: an input is invalid or a check failed; findings were printed", false},
	{Usage, ErrUsage, "usage: bad flags or arguments, or an input path that cannot be read", false},
	{Internal, nil, "internal: the command could not be carried out (a bug or an environment problem)", true},
	{Interrupted, ErrInterrupted, "interrupted by SIGINT, SIGTERM, SIGHUP or SIGQUIT; the server was shut down; nothing claiming success was written (qualrun run writes an interrupted receipt)", true},
}

// RetryCodes lists the non-zero codes a fleet engine retries, and FinalCodes the others, in table
// order.
func RetryCodes() (retry, final []int) {
	for _, row := range Table {
		switch {
		case row.Code == OK:
		case row.Retry:
			retry = append(retry, row.Code)
		default:
			final = append(final, row.Code)
		}
	}
	return retry, final
}

// Code returns the exit code for err: 0 for nil, the table's code for a wrapped sentinel, and
// Internal for anything else.
func Code(err error) int {
	if err == nil {
		return OK
	}
	for _, row := range Table {
		if row.Err != nil && errors.Is(err, row.Err) {
			return row.Code
		}
	}
	return Internal
}
