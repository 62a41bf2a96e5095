package lifecycle

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestUnboundIdentitySignalsNoGroup: a server whose identity was never bound (its leader exited
// before qualrun read it, so the bound pid and group stayed 0) is not signalled by group.
// Before, checkIdentity found no pid 0 and let signalGroup send SIGTERM to -0, which is qualrun's
// own process group: stop 32's CI was ended that way (exit 143, "make: *** wait: No child
// processes"). The check runs in a child process in a group of its own, so that a regression
// kills only that child, which the test then sees.
func TestUnboundIdentitySignalsNoGroup(t *testing.T) {
	if os.Getenv("QUALKIT_UNBOUND_HELPER") == "1" {
		fsys, err := newFS()
		if err != nil {
			fmt.Println("no procfs:", err)
			os.Exit(3)
		}
		s := &tree{fs: fsys, self: os.Getpid(), exited: make(chan struct{})}
		if err := s.signalGroup(unix.SIGTERM); !errors.Is(err, ErrUnbound) {
			fmt.Println("signalGroup:", err)
			os.Exit(4)
		}
		s.killAll()
		if owned, err := s.ownedTree(); err != nil || len(owned) != 0 {
			fmt.Println("owned without a leader:", len(owned), err)
			os.Exit(5)
		}
		fmt.Println("survived")
		os.Exit(0)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestUnboundIdentitySignalsNoGroup$", "-test.count=1")
	cmd.Env = append(os.Environ(), "QUALKIT_UNBOUND_HELPER=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.CombinedOutput()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		t.Fatalf("the helper was killed by %s: an unbound server's shutdown signalled its own process group\n%s", ws.Signal(), out)
	}
	if err != nil || !strings.Contains(string(out), "survived") {
		t.Fatalf("helper: %v\n%s", err, out)
	}
}
