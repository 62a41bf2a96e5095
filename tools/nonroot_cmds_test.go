package tools_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/rogpeppe/go-internal/testscript"
)

// The non-root commands run a campaign as an unprivileged user the test creates, with or without
// a cgroup v2 subtree delegated to that user (docs/lifecycle.md, "Non-root hosts"). They need
// root (the [root] condition) to create the user and the subtree.

// testUserName is the unprivileged account the scripts run qualrun as.
const testUserName = "qualkit-test"

var (
	qualrunOnce sync.Once
	qualrunErr  error
)

// rootCondition reports whether this host lets a script create a user and a delegated cgroup:
// root, useradd on $PATH and a cgroup v2 mount.
func rootCondition() bool {
	if os.Geteuid() != 0 {
		return false
	}
	if _, err := exec.LookPath("useradd"); err != nil {
		return false
	}
	_, err := cgroup2Root()
	return err == nil
}

// cgroup2Root is the cgroup v2 mount point (from /proc/self/mountinfo).
func cgroup2Root() (string, error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if pre, post, ok := strings.Cut(line, " - "); ok && strings.HasPrefix(post, "cgroup2 ") {
			if f := strings.Fields(pre); len(f) > 4 {
				return f[4], nil
			}
		}
	}
	return "", fmt.Errorf("no cgroup2 mount")
}

// testUser returns the test account's uid and gid, creating the account when it is missing.
func testUser() (uid, gid int, err error) {
	u, err := user.Lookup(testUserName)
	if err != nil {
		out, aerr := exec.Command("useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", testUserName).CombinedOutput()
		if aerr != nil && !bytes.Contains(out, []byte("already exists")) {
			return 0, 0, fmt.Errorf("useradd %s: %v: %s", testUserName, aerr, out)
		}
		if u, err = user.Lookup(testUserName); err != nil {
			return 0, 0, err
		}
	}
	uid, _ = strconv.Atoi(u.Uid)
	gid, _ = strconv.Atoi(u.Gid)
	return uid, gid, nil
}

// cmdTestUser: create the unprivileged test account if needed, give it $WORK, and make $WORK's
// ancestors traversable, so that the account can run qualrun in the script's repository.
// Sets $TESTUID.
func cmdTestUser(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: testuser")
	}
	uid, gid, err := testUser()
	ts.Check(err)
	work := ts.Getenv("WORK")
	ts.Check(filepath.Walk(work, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	}))
	for dir := filepath.Dir(work); dir != "/"; dir = filepath.Dir(dir) {
		fi, err := os.Stat(dir)
		ts.Check(err)
		if fi.Mode().Perm()&0o001 == 0 {
			ts.Check(os.Chmod(dir, fi.Mode().Perm()|0o001))
		}
	}
	ts.Setenv("TESTUID", strconv.Itoa(uid))
}

// cmdDelegCgroup NAME: create a cgroup v2 directory for this script and delegate it to the test
// account (the directory and its cgroup.procs, cgroup.threads and cgroup.subtree_control, as
// systemd's Delegate=yes does). Sets $DELEG; the directory is removed when the script ends.
func cmdDelegCgroup(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: delegcgroup NAME")
	}
	root, err := cgroup2Root()
	ts.Check(err)
	uid, gid, err := testUser()
	ts.Check(err)
	dir := filepath.Join(root, fmt.Sprintf("qualkit-test-deleg-%d-%s", os.Getpid(), args[0]))
	ts.Check(os.Mkdir(dir, 0o755))
	ts.Defer(func() { _ = os.Remove(dir) })
	for _, p := range []string{"", "cgroup.procs", "cgroup.threads", "cgroup.subtree_control"} {
		ts.Check(os.Chown(filepath.Join(dir, p), uid, gid))
	}
	ts.Setenv("DELEG", dir)
}

// cmdAsUser [-cgroup DIR] PROG ARGS...: run PROG as the test account, born in cgroup DIR when
// given (CLONE_INTO_CGROUP), with a small environment (PATH with qualsim and a real qualrun,
// HOME=$WORK). Like exec, its stdout and stderr become the script's, and ! expects a failure.
func cmdAsUser(ts *testscript.TestScript, neg bool, args []string) {
	var cg string
	if len(args) > 2 && args[0] == "-cgroup" {
		cg, args = args[1], args[2:]
	}
	if len(args) == 0 {
		ts.Fatalf("usage: asuser [-cgroup DIR] PROG ARGS...")
	}
	uid, gid, err := testUser()
	ts.Check(err)
	bin := filepath.Dir(ts.Getenv("QUALSIM"))
	prog := args[0]
	switch prog {
	case "qualrun":
		prog = realQualrun(ts, bin)
	default:
		if p, err := exec.LookPath(prog); err == nil {
			prog = p
		}
	}
	cmd := exec.Command(prog, args[1:]...)
	cmd.Dir = ts.MkAbs(".")
	cmd.Env = []string{"PATH=" + bin + ":/usr/local/bin:/usr/bin:/bin", "HOME=" + ts.Getenv("WORK"),
		"GIT_CONFIG_GLOBAL=/dev/null", "TMPDIR=" + ts.Getenv("WORK")}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
	if cg != "" {
		f, err := os.Open(cg)
		ts.Check(err)
		defer f.Close()
		cmd.SysProcAttr.UseCgroupFD = true
		cmd.SysProcAttr.CgroupFD = int(f.Fd())
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	ts.Logf("[asuser %s] %v", strings.Join(args, " "), err)
	fmt.Fprint(ts.Stdout(), stdout.String())
	fmt.Fprint(ts.Stderr(), stderr.String())
	switch {
	case err != nil && !neg:
		ts.Fatalf("asuser %s: %v\n%s", args[0], err, stderr.String())
	case err == nil && neg:
		ts.Fatalf("asuser %s: unexpected success", args[0])
	}
}

// realQualrun builds qualrun into the scripts' binary directory once (the test account cannot
// run the test binary that testscript's registered qualrun re-executes).
func realQualrun(ts *testscript.TestScript, bin string) string {
	qualrunOnce.Do(func() {
		out, err := exec.Command("go", "build", "-o", bin+"/", "./cmd/qualrun").CombinedOutput()
		if err != nil {
			qualrunErr = fmt.Errorf("go build qualrun: %v\n%s", err, out)
			return
		}
		qualrunErr = os.Chmod(bin, 0o755)
	})
	ts.Check(qualrunErr)
	return filepath.Join(bin, "qualrun")
}
