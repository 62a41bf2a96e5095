package qualrun

import (
	"context"
	"os"

	"github.com/qualkit/qualkit/runner/campaign"
	"github.com/qualkit/qualkit/tools/internal/cliapp"
)

// interruptContext returns a context that the first interrupt signal (cliapp.InterruptSignals)
// cancels, with a *campaign.Interruption naming the signal as its cause. Later signals are caught
// and dropped: the shutdown is already under way (SIGKILL still ends qualrun, and the server's
// keeper then stops the server).
func interruptContext(parent context.Context) (context.Context, func()) {
	return cliapp.NotifyInterrupt(parent, func(sig os.Signal) error {
		return &campaign.Interruption{Signal: cliapp.SignalName(sig)}
	}, nil)
}
