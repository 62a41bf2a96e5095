package lifecycle

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// cgroup is a cgroup v2 directory created for one server. Placing the server in it at clone time
// (CLONE_INTO_CGROUP) makes every descendant findable, whatever it does with sessions and groups.
type cgroup struct {
	dir string
	fd  *os.File
}

var cgroupSeq atomic.Int64

// cgroup2Mount finds the cgroup v2 mount point and this process's cgroup under it.
func cgroup2Mount() (mount, self string, err error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// id parent major:minor root mountpoint options ... - fstype source superoptions
		fields := strings.Fields(sc.Text())
		for i, x := range fields {
			if x == "-" && i+1 < len(fields) && fields[i+1] == "cgroup2" && len(fields) > 4 {
				mount = fields[4]
			}
		}
		if mount != "" {
			break
		}
	}
	if mount == "" {
		return "", "", errors.New("no cgroup2 file system mounted")
	}
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", "", err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			return mount, p, nil
		}
	}
	return "", "", errors.New("this process has no cgroup v2 membership")
}

// planCgroup names a child cgroup of this process's cgroup v2 for one server or command, without
// creating it: the keeper is told the name before the directory exists (Launch, startGroup), so
// that no moment has a cgroup on the host that no keeper would remove. runID, when it is a safe
// name, ends the cgroup's name, so that a leftover can be named by its run even when none of its
// processes carries the run markers.
func planCgroup(runID string) (string, error) {
	mount, self, err := cgroup2Mount()
	if err != nil {
		return "", err
	}
	return filepath.Join(mount, self, cgroupName(cgroupSeq.Add(1), runID)), nil
}

// makeCgroup creates the cgroup planCgroup named. pidLimit > 0 asks for pids.max; an error means
// the host cannot give what was asked, and the caller reports it.
func makeCgroup(dir string, pidLimit int64) (*cgroup, []string, error) {
	parent := filepath.Dir(dir)
	if err := os.Mkdir(dir, 0o755); err != nil {
		if errors.Is(err, fs.ErrPermission) {
			return nil, nil, notDelegated(parent, err)
		}
		return nil, nil, fmt.Errorf("create cgroup: %w", err)
	}
	var unsupported []string
	if pidLimit > 0 {
		if err := enablePids(parent, dir, pidLimit); err != nil {
			unsupported = append(unsupported, "pid_limit: "+err.Error())
		}
	}
	fd, err := os.Open(dir)
	if err != nil {
		_ = os.Remove(dir)
		return nil, nil, fmt.Errorf("open cgroup: %w", err)
	}
	return &cgroup{dir: dir, fd: fd}, unsupported, nil
}

// DelegateHint is how a user without a delegated cgroup gets one (docs/lifecycle.md, "Non-root
// hosts"): systemd creates a scope whose cgroup the user owns, and qualrun's servers go below it.
const DelegateHint = "systemd-run --user --scope -p Delegate=yes qualrun ..."

// notDelegated explains a refused mkdir under this process's own cgroup: the cgroup is not
// delegated to this user (a non-root qualrun may only create cgroups in a subtree it owns).
func notDelegated(parent string, err error) error {
	owner := "unknown owner"
	if fi, serr := os.Stat(parent); serr == nil {
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			owner = fmt.Sprintf("owned by uid %d", st.Uid)
		}
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err // the path is named once, as the parent
	}
	return fmt.Errorf("create cgroup: qualrun's cgroup %s (%s) is not delegated to uid %d (mkdir: %w); run qualrun in a delegated scope: %s",
		parent, owner, os.Getuid(), err, DelegateHint)
}

func enablePids(parent, dir string, limit int64) error {
	ctrl, err := os.ReadFile(filepath.Join(parent, "cgroup.controllers"))
	if err != nil || !slices.Contains(strings.Fields(string(ctrl)), "pids") {
		return errors.New("no cgroup v2 pids controller on this host")
	}
	if err := os.WriteFile(filepath.Join(parent, "cgroup.subtree_control"), []byte("+pids"), 0); err != nil {
		return fmt.Errorf("enable the pids controller: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "pids.max"), []byte(strconv.FormatInt(limit, 10)), 0); err != nil {
		return fmt.Errorf("write pids.max: %w", err)
	}
	return nil
}

// pids lists the processes in the cgroup.
func (c *cgroup) pids() []int {
	b, err := os.ReadFile(filepath.Join(c.dir, "cgroup.procs"))
	if err != nil {
		return nil
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if n, err := strconv.Atoi(f); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// kill SIGKILLs every process in the cgroup (cgroup.kill, Linux 5.14+).
func (c *cgroup) kill() error {
	return os.WriteFile(filepath.Join(c.dir, "cgroup.kill"), []byte("1"), 0)
}

// remove deletes the cgroup once it is empty, waiting briefly for the kernel to drain it.
func (c *cgroup) remove() error {
	if c == nil {
		return nil
	}
	c.fd.Close()
	var err error
	for i := 0; i < 50; i++ {
		if err = os.Remove(c.dir); err == nil || errors.Is(err, os.ErrNotExist) {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("remove cgroup %s: %w", c.dir, err)
}
