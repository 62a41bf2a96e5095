package runner_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/qualkit/qualkit/schemas/depcheck"
)

// TestDependencyDirection keeps the workspace graph one-way: schemas <- runner <- tools.
func TestDependencyDirection(t *testing.T) {
	depcheck.Forbid(t, ".", "github.com/qualkit/qualkit/attest", "github.com/qualkit/qualkit/verify", "github.com/qualkit/qualkit/tools", "cuelang.org/go")
}

// TestNVMLStaysInDevicePackages: go-nvml (cgo, a dlopen'ed vendor library) is imported only by
// runner/device and runner/telemetry, which build and report "unsupported" without it; a new
// importer is a reviewed change of this list. Its mock packages are allowed there too (the
// --device-fixture fake NVML).
func TestNVMLStaysInDevicePackages(t *testing.T) {
	allowed := map[string]bool{"github.com/qualkit/qualkit/runner/device": true, "github.com/qualkit/qualkit/runner/telemetry": true}
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		for _, imp := range f[1:] {
			if strings.HasPrefix(imp, "github.com/NVIDIA/go-nvml") && !allowed[f[0]] {
				t.Errorf("%s imports %s: NVML belongs to runner/device and runner/telemetry (review, then add it here)", f[0], imp)
			}
		}
	}
}

// TestKubernetesTypesStayInFleet: k8s.io/api and apimachinery (the Indexed Job types) are imported
// only by runner/fleet, which generates Jobs and never talks to a cluster; no client-go.
func TestKubernetesTypesStayInFleet(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		for _, imp := range f[1:] {
			if strings.HasPrefix(imp, "k8s.io/client-go") || (strings.HasPrefix(imp, "k8s.io/") && f[0] != "github.com/qualkit/qualkit/runner/fleet") {
				t.Errorf("%s imports %s: the Kubernetes types belong to runner/fleet, and no cluster client is linked", f[0], imp)
			}
		}
	}
}
