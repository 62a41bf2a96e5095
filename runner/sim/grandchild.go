package sim

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"syscall"
)

// ListenerFD is the file descriptor under which a grandchild inherits the listening socket.
const ListenerFD = 3

// StartGrandchild starts argv (argv[0] is the program) as the leader of a new session (setsid),
// with standard input, output and error on /dev/null, so that it survives a signal to its
// parent's process group. If ln is not nil the grandchild inherits it as file descriptor
// ListenerFD (see InheritedListener). It does not wait for the process: the caller reaps it if
// it exits first, and otherwise leaves it running, which is the point of the setsid-grandchild
// and grandchild-keeps-listener faults.
func StartGrandchild(argv []string, ln net.Listener) (*exec.Cmd, error) {
	if len(argv) == 0 {
		return nil, errors.New("start grandchild: empty argv")
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if ln != nil {
		fl, ok := ln.(interface{ File() (*os.File, error) })
		if !ok {
			return nil, fmt.Errorf("start grandchild: listener %T has no file", ln)
		}
		f, err := fl.File()
		if err != nil {
			return nil, fmt.Errorf("start grandchild: listener file: %w", err)
		}
		defer f.Close()
		cmd.ExtraFiles = []*os.File{f} // fd 3 == ListenerFD
	}
	err := cmd.Start()
	if ln != nil {
		// os/exec put the shared file description in blocking mode (File.Fd does); an accept
		// that blocks in the kernel cannot be interrupted by Close, so make it non-blocking again.
		if nerr := setNonblock(ln); nerr != nil && err == nil {
			cmd.Process.Kill()
			cmd.Wait()
			return nil, fmt.Errorf("start grandchild: listener: %w", nerr)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("start grandchild %s: %w", argv[0], err)
	}
	return cmd, nil
}

func setNonblock(ln net.Listener) error {
	sc, ok := ln.(syscall.Conn)
	if !ok {
		return fmt.Errorf("listener %T has no raw connection", ln)
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = syscall.SetNonblock(int(fd), true) }); err != nil {
		return err
	}
	return serr
}

// InheritedListener returns the listening socket a grandchild inherited as ListenerFD.
func InheritedListener() (net.Listener, error) {
	f := os.NewFile(ListenerFD, "inherited-listener")
	if f == nil {
		return nil, errors.New("no inherited listener")
	}
	defer f.Close()
	ln, err := net.FileListener(f)
	if err != nil {
		return nil, fmt.Errorf("inherited listener on fd %d: %w", ListenerFD, err)
	}
	return ln, nil
}
