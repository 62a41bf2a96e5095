// Package qualrun is the qualrun command line: it turns flags into calls of the runner library and
// decides what the user sees.
package qualrun

import (
	"io"

	"github.com/qualkit/qualkit/tools/internal/cliapp"
)

// Version is set at build time with -ldflags "-X .../qualrun.Version=...".
var Version = "dev"

// Main runs qualrun with args (args[0] is the program name) and returns the exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	return cliapp.Main(cliapp.New("qualrun", "run qualkit campaigns against an owned server on this host", Version, stdout, stderr,
		runCommand(), serveCommand(), captureCommand(), keygenCommand(), attestCommand()), args)
}
