// Package depcheck lets each module's tests assert the workspace's dependency direction
// (schemas <- runner, attest, verify <- tools) from the real build graph, as `go list -deps` sees it.
package depcheck

import (
	"os/exec"
	"strings"
	"testing"
)

// Deps returns every package that the packages under dir (a module root, "./..." pattern) import,
// directly or not, test files excluded.
func Deps(tb testing.TB, dir string) []string {
	tb.Helper()
	cmd := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", "./...")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		tb.Fatalf("go list -deps in %s: %v\n%s", dir, err, msg)
	}
	return strings.Fields(string(out))
}

// Forbid fails tb for each dependency of the module at dir that equals a forbidden path or lies under
// it (a forbidden "net/http" also forbids "net/http/httptrace"). It returns the dependency list so
// a caller can assert more.
func Forbid(tb testing.TB, dir string, forbidden ...string) []string {
	tb.Helper()
	deps := Deps(tb, dir)
	for _, d := range deps {
		for _, f := range forbidden {
			if d == f || strings.HasPrefix(d, f+"/") {
				tb.Errorf("%s depends on %s, which this module must not import (forbidden: %s)", dir, d, f)
			}
		}
	}
	return deps
}
