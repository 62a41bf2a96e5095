package campaign

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qualkit/qualkit/runner/driver"
	"github.com/qualkit/qualkit/schemas/evidence"
)

// driverRepo commits a driver spec (isolation.required as given) and the files it pins in a
// fresh git repository and returns the spec's path.
func driverRepo(t *testing.T, required bool) string {
	t.Helper()
	home := t.TempDir() // no global git configuration (an excludes file) decides what is clean
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		".gitignore":           ".qualification/\n",
		"drivers/sh-worker.sh": "#!/bin/sh\nexit 0\n",
		"drivers/request.json": `{"schema": "qualkit.driver-request.v1", "id": "sh-request", "input_token_ids": [1, 2, 3], "candidates": [], "paths": []}` + "\n",
		"drivers/model.txt":    "a model the worker never reads\n",
	}
	digest := func(rel string) string { return evidence.DigestOf([]byte(files[rel])) }
	files["spec.json"] = fmt.Sprintf(`{
  "schema": "qualkit.driver-spec.v1", "id": "sh-driver", "description": "A worker that exits.",
  "contract": "qualkit.next-token-result.v2",
  "worker": {"executable": "/bin/sh", "executable_digest": null, "script": "drivers/sh-worker.sh", "script_digest": %q, "args": []},
  "request": {"path": "drivers/request.json", "digest": %q},
  "model": {"path": "drivers/model.txt", "digest": %q},
  "environment": {}, "isolation": {"network": "private_loopback", "required": %v},
  "timeout_seconds": 60, "tolerances": []
}
`, digest("drivers/sh-worker.sh"), digest("drivers/request.json"), digest("drivers/model.txt"), required)
	commitRepo(t, dir, files)
	return filepath.Join(dir, "spec.json")
}

// A mechanism the host lacks (denied, as qualrun's test hook does) decides the run by the one
// policy, driver.UnsupportedVerdict: required isolation fails, preferred isolation is skipped,
// the worker never starts and nothing is written.
func TestDriverUnsupportedMechanism(t *testing.T) {
	for _, tc := range []struct {
		required     bool
		status, rule string
	}{
		{true, "failed", "; isolation is required, so the driver fails (the worker was not run)"},
		{false, "skipped", "; isolation.required is false, so the driver is skipped (the worker never runs unisolated)"},
	} {
		spec := driverRepo(t, tc.required)
		plan, err := PrepareDriver(context.Background(), DriverConfig{Spec: spec, Version: "test", BinaryDigest: evidence.DigestOf(nil)})
		if err != nil {
			t.Fatal(err)
		}
		out, err := plan.Run(context.Background(), []string{driver.MechUserNamespaces})
		if err != nil {
			t.Fatal(err)
		}
		if out.Run != nil || string(out.Status) != tc.status || len(out.Unsupported) != 1 || len(out.Reasons) != 1 ||
			out.Reasons[0] != out.Unsupported[0]+tc.rule || out.Result != "" || out.WorkerLog != "" {
			t.Errorf("required %v: outcome %+v", tc.required, out)
		}
		if _, err := os.Stat(filepath.Join(filepath.Dir(spec), DriversDir)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("required %v: %s exists (%v): nothing may be written", tc.required, DriversDir, err)
		}
	}
}

// PrepareDriver classes its errors for the caller: ErrInput (what the caller passed),
// ErrDriverSpec (the spec), ErrDriverRefused (the source or the pins; nothing started). The
// unsafe allowance runs a dirty tree with a warning.
func TestPrepareDriverRefusals(t *testing.T) {
	spec := driverRepo(t, true)
	root := filepath.Dir(spec)
	ctx := context.Background()
	check := func(name string, cfg DriverConfig, class error, want string) {
		t.Helper()
		if cfg.Spec == "" {
			cfg.Spec = spec
		}
		_, err := PrepareDriver(ctx, cfg)
		if !errors.Is(err, class) || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), class.Error()+":") {
			t.Errorf("%s: PrepareDriver = %v; want %v saying %q", name, err, class, want)
		}
	}
	check("var", DriverConfig{Vars: []string{"novalue"}}, ErrInput, `--var "novalue": want NAME=VALUE`)
	check("output", DriverConfig{Output: filepath.Join(root, "out.txt")}, ErrInput, "must end in .json")
	invalid := filepath.Join(t.TempDir(), "invalid.json")
	if err := os.WriteFile(invalid, []byte(`{"schema": "qualkit.driver-spec.v1", "id": "x"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	check("invalid spec", DriverConfig{Spec: invalid}, ErrDriverSpec, invalid)

	existing := filepath.Join(root, ".qualification", "r.json")
	if err := os.MkdirAll(filepath.Dir(existing), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(existing, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	check("existing output", DriverConfig{Output: existing}, ErrInput, "already exists; results are never replaced")

	if err := os.WriteFile(filepath.Join(root, "drivers", "model.txt"), []byte("changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	check("dirty", DriverConfig{}, ErrDriverRefused, "the worktree is not clean (drivers/model.txt)")
	check("dirty", DriverConfig{}, ErrDriverRefused, "\nnothing was started and no start gate was created")
	var warnings []string
	plan, err := PrepareDriver(ctx, DriverConfig{Spec: spec, AllowDirtyUnsafe: true, Warn: func(s string) { warnings = append(warnings, s) }})
	if err != nil || plan == nil {
		t.Fatalf("PrepareDriver with the unsafe allowance = %v", err)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "--allow-dirty-unsafe") {
		t.Errorf("warnings %q", warnings)
	}
}
