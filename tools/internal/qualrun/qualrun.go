// Package qualrun is the qualrun command line: it turns flags into calls of the runner library and
// decides what the user sees.
package qualrun

import (
	"io"

	"github.com/qualkit/qualkit/runner/driver"
	"github.com/qualkit/qualkit/runner/lifecycle"
	"github.com/qualkit/qualkit/tools/internal/cliapp"
)

// Version is set at build time with -ldflags "-X .../qualrun.Version=...".
var Version = "dev"

// Main runs qualrun with args (args[0] is the program name) and returns the exit code.
//
// A process started with driver.GuardArg as its first argument is an evidence driver's guard:
// qualrun re-executes itself that way to start a worker in its own namespaces (runner/driver).
// It is handled here, before the command line is parsed, and returns only on failure. So is a
// process started with lifecycle.KeeperArg: the keeper that stops an owned server if qualrun dies.
func Main(args []string, stdout, stderr io.Writer) int {
	if driver.IsGuard(args) {
		return driver.GuardMain(args)
	}
	if lifecycle.IsKeeper(args) {
		return lifecycle.KeeperMain(args)
	}
	return cliapp.Main(cliapp.New("qualrun", "run qualkit campaigns against an owned server on this host", Version, stdout, stderr,
		runCommand(), serveCommand(), driverCommand(), captureCommand(), keygenCommand(), attestCommand(), importCommand(), initCommand(), layoutCommand(), fleetCommand(), traceCommand(), publishCommand()), args)
}
