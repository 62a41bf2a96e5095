package pyruntime

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/qualkit/qualkit/schemas"
	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/evidence"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func python3(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not found")
	}
	return p
}

// ask runs a one-line Python program with the interpreter and returns its trimmed output.
func ask(t *testing.T, python, code string) string {
	t.Helper()
	out, err := exec.Command(python, "-I", "-c", code).Output()
	if err != nil {
		t.Fatalf("%s -c %q: %v", python, code, err)
	}
	return strings.TrimSpace(string(out))
}

func checkValid(t *testing.T, doc *contract.RuntimeManifestDoc) {
	t.Helper()
	data, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	out, err := schemas.CheckDocument(data)
	if err != nil || !out.Valid() || out.Contract.Name != contract.RuntimeManifest {
		t.Fatalf("CheckDocument: %v %+v", err, out)
	}
	names := make([]string, len(doc.Packages))
	for i, p := range doc.Packages {
		names[i] = p.Name
	}
	if !slices.IsSorted(names) || len(slices.Compact(slices.Clone(names))) != len(names) {
		t.Errorf("packages not sorted and unique: %q", names)
	}
	if !regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`).MatchString(doc.CreatedAt) {
		t.Errorf("created_at %q", doc.CreatedAt)
	}
}

// TestCaptureMachinePython captures this machine's python3 as it is.
func TestCaptureMachinePython(t *testing.T) {
	py := python3(t)
	doc, err := Capture(context.Background(), py, "machine-python3", "")
	if err != nil {
		t.Fatal(err)
	}
	checkValid(t, doc)
	if want := ask(t, py, "import platform; print(platform.python_version())"); doc.Interpreter.Version != want || want == "" {
		t.Errorf("version %q, want %q", doc.Interpreter.Version, want)
	}
	exe, err := filepath.EvalSymlinks(ask(t, py, "import sys; print(sys.executable)"))
	if err != nil {
		t.Fatal(err)
	}
	if d, _, err := evidence.DigestFile(exe); err != nil || d != doc.Interpreter.Digest {
		t.Errorf("interpreter digest %s, sha256 of %s is %s (%v)", doc.Interpreter.Digest, exe, d, err)
	}
	if doc.Interpreter.Path != py || doc.Interpreter.Kind != "python" || doc.Schema != contract.RuntimeManifestSchema || doc.ID != "machine-python3" {
		t.Errorf("interpreter %+v, schema %s, id %s", doc.Interpreter, doc.Schema, doc.ID)
	}
	if doc.LaunchImplementation != nil {
		t.Errorf("launch_implementation %+v without one given", doc.LaunchImplementation)
	}
	t.Logf("%s: Python %s, %d distributions", py, doc.Interpreter.Version, len(doc.Packages))
}

// newVenv makes a venv without pip and returns its python and its site-packages directory.
func newVenv(t *testing.T) (string, string) {
	t.Helper()
	py := python3(t)
	dir := filepath.Join(t.TempDir(), "venv")
	if out, err := exec.Command(py, "-m", "venv", "--without-pip", dir).CombinedOutput(); err != nil {
		t.Skipf("python3 -m venv: %v\n%s", err, out)
	}
	vpy := filepath.Join(dir, "bin", "python")
	return vpy, ask(t, vpy, "import sysconfig; print(sysconfig.get_paths()['purelib'])")
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestCaptureVenv(t *testing.T) {
	vpy, site := newVenv(t)
	writeFile(t, filepath.Join(site, "Foo_Bar-1.0.dist-info", "METADATA"), "Metadata-Version: 2.1\nName: Foo_Bar\nVersion: 1.0\nSummary: x\n\nName: not-this\n")
	writeFile(t, filepath.Join(site, "Foo_Bar-1.0.dist-info", "RECORD"), "foo_bar/__init__.py,,\n")
	writeFile(t, filepath.Join(site, "foo.bar-9.9.dist-info", "METADATA"), "Name: foo.bar\nVersion: 9.9\n") // same normalised name: first wins
	writeFile(t, filepath.Join(site, "zeta-2.0rc1.dist-info", "METADATA"), "Name: zeta\r\nVersion: 2.0rc1\r\n")
	writeFile(t, filepath.Join(site, "Old.Pkg-0.1.egg-info"), "Metadata-Version: 1.0\nName: Old.Pkg\nVersion: 0.1\n")
	writeFile(t, filepath.Join(site, "~ip-1.0.dist-info", "METADATA"), "Name: ip\nVersion: 1.0\n")
	writeFile(t, filepath.Join(site, "notes.txt"), "not a distribution")
	launch := filepath.Join(t.TempDir(), "launch.py")
	writeFile(t, launch, "print('launch')\n")

	doc, err := Capture(context.Background(), vpy, "venv-test", launch)
	if err != nil {
		t.Fatal(err)
	}
	checkValid(t, doc)
	record, _, _ := evidence.DigestFile(filepath.Join(site, "Foo_Bar-1.0.dist-info", "RECORD"))
	want := []contract.Package{
		{Name: "foo-bar", Version: "1.0", Digest: record},
		{Name: "old-pkg", Version: "0.1"},
		{Name: "zeta", Version: "2.0rc1"},
	}
	if !slices.Equal(doc.Packages, want) {
		t.Errorf("packages\n got %+v\nwant %+v", doc.Packages, want)
	}
	ld, _, _ := evidence.DigestFile(launch)
	if doc.LaunchImplementation == nil || doc.LaunchImplementation.Path != launch || doc.LaunchImplementation.Digest != ld {
		t.Errorf("launch_implementation %+v, want %s %s", doc.LaunchImplementation, launch, ld)
	}
	if doc.Interpreter.Path != vpy {
		t.Errorf("interpreter path %q, want %q as given", doc.Interpreter.Path, vpy)
	}

	// A relative interpreter path is resolved against the caller's directory and recorded as given.
	t.Chdir(filepath.Dir(filepath.Dir(filepath.Dir(vpy))))
	rel, err := Capture(context.Background(), "venv/bin/python", "venv-test", "")
	if err != nil {
		t.Fatal(err)
	}
	if rel.Interpreter.Path != "venv/bin/python" || rel.Interpreter.Digest != doc.Interpreter.Digest || !slices.Equal(rel.Packages, want) {
		t.Errorf("relative path: %+v, %+v", rel.Interpreter, rel.Packages)
	}
}

func TestCaptureErrors(t *testing.T) {
	ctx := context.Background()
	if _, err := Capture(ctx, "python3", "X", ""); !errors.Is(err, ErrInvalidID) {
		t.Errorf("bad id: %v", err)
	}
	if _, err := Capture(ctx, filepath.Join(t.TempDir(), "nope"), "abc", ""); !errors.Is(err, ErrInterpreter) {
		t.Errorf("missing interpreter: %v", err)
	}
	notPython := filepath.Join(t.TempDir(), "fake")
	writeFile(t, notPython, "#!/bin/sh\necho hello\n")
	os.Chmod(notPython, 0o755)
	if _, err := Capture(ctx, notPython, "abc", ""); !errors.Is(err, ErrInterpreter) || !strings.Contains(err.Error(), "no probe answer") {
		t.Errorf("not a python: %v", err)
	}
	failing := filepath.Join(t.TempDir(), "failing")
	writeFile(t, failing, "#!/bin/sh\necho broken >&2\nexit 3\n")
	os.Chmod(failing, 0o755)
	if _, err := Capture(ctx, failing, "abc", ""); !errors.Is(err, ErrInterpreter) || !strings.Contains(err.Error(), "broken") {
		t.Errorf("failing interpreter: %v", err)
	}
	py := python3(t)
	if _, err := Capture(ctx, py, "abc", filepath.Join(t.TempDir(), "missing.py")); err == nil || !strings.Contains(err.Error(), "missing.py") {
		t.Errorf("missing launch implementation: %v", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := Capture(cancelled, py, "abc", ""); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

// TestCaptureClosedEnvironment: PYTHONPATH and friends in qualrun's environment do not leak into
// the probe (the manifest describes the interpreter, not the caller's shell).
func TestCaptureClosedEnvironment(t *testing.T) {
	vpy, _ := newVenv(t)
	extra := t.TempDir()
	writeFile(t, filepath.Join(extra, "site-packages", "leak-1.0.dist-info", "METADATA"), "Name: leak\nVersion: 1.0\n")
	t.Setenv("PYTHONPATH", filepath.Join(extra, "site-packages"))
	doc, err := Capture(context.Background(), vpy, "closed-env", "")
	if err != nil {
		t.Fatal(err)
	}
	if len(doc.Packages) != 0 {
		t.Errorf("packages from the caller's PYTHONPATH leaked in: %+v", doc.Packages)
	}
}

func TestNormalizeName(t *testing.T) {
	for in, want := range map[string]string{
		"Foo_Bar": "foo-bar", "foo.bar": "foo-bar", "FOO--_.bar": "foo-bar", "zope.interface": "zope-interface",
		"PyYAML": "pyyaml", "a": "a",
	} {
		if got := NormalizeName(in); got != want {
			t.Errorf("NormalizeName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestDistributionsErrors(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "nover-1.0.dist-info", "METADATA"), "Name: nover\n\nVersion: 1.0\n")
	if _, err := Distributions([]string{dir}); err == nil || !strings.Contains(err.Error(), filepath.Join("nover-1.0.dist-info", "METADATA")) {
		t.Errorf("METADATA without Version in its header: %v", err)
	}
	dir2 := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir2, "nometa-1.0.dist-info"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Distributions([]string{dir2}); err == nil || !strings.Contains(err.Error(), "nometa-1.0.dist-info") {
		t.Errorf("dist-info without METADATA: %v", err)
	}
	if _, err := Distributions([]string{filepath.Join(dir2, "missing")}); err == nil {
		t.Error("missing site directory: no error")
	}
}

func TestSiteDirs(t *testing.T) {
	base := t.TempDir()
	for _, d := range []string{"lib/python3/site-packages", "usr/dist-packages", "lib/python3"} {
		if err := os.MkdirAll(filepath.Join(base, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(base, "alias", "site-packages")
	os.MkdirAll(filepath.Dir(link), 0o755)
	if err := os.Symlink(filepath.Join(base, "lib/python3/site-packages"), link); err != nil {
		t.Fatal(err)
	}
	got := SiteDirs([]string{
		"", "relative/site-packages", filepath.Join(base, "lib/python3"), filepath.Join(base, "lib/python3/site-packages"),
		filepath.Join(base, "missing/site-packages"), link, filepath.Join(base, "usr/dist-packages"), filepath.Join(base, "python311.zip"),
	})
	want := []string{filepath.Join(base, "lib/python3/site-packages"), filepath.Join(base, "usr/dist-packages")}
	if !slices.Equal(got, want) {
		t.Errorf("SiteDirs = %q, want %q", got, want)
	}
}
