package qualrun

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qualkit/qualkit/schemas"
	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/tools/internal/exitcode"
)

func runMain(args ...string) (int, string, string) {
	var stdout, stderr bytes.Buffer
	code := Main(append([]string{"qualrun"}, args...), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func TestCaptureRuntimeWritesValidManifest(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not found")
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "runtime.json")
	launch := filepath.Join(dir, "launch.py")
	if err := os.WriteFile(launch, []byte("print('x')\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runMain("capture-runtime", "--python", py, "--output", out, "--launch-implementation", launch)
	if code != exitcode.OK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasSuffix(data, []byte("}\n")) || !bytes.Contains(data, []byte("\n  \"schema\": \"qualkit.runtime-manifest.v1\",\n")) {
		t.Errorf("not 2-space indented JSON with a final newline:\n%.200s", data)
	}
	res, err := schemas.CheckDocument(data)
	if err != nil || !res.Valid() {
		t.Fatalf("written manifest does not validate: %v %+v", err, res)
	}
	var doc contract.RuntimeManifestDoc
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.ID != defaultID(doc.Interpreter.Version) || !strings.HasPrefix(doc.ID, "python-3") {
		t.Errorf("default id %q for version %q", doc.ID, doc.Interpreter.Version)
	}
	if doc.LaunchImplementation == nil || doc.LaunchImplementation.Path != launch {
		t.Errorf("launch_implementation %+v", doc.LaunchImplementation)
	}
	if !strings.Contains(stdout, "wrote "+out) {
		t.Errorf("stdout %q", stdout)
	}

	// A second capture to the same file is refused and leaves the file alone.
	code, _, stderr = runMain("capture-runtime", "--python", py, "--output", out, "--id", "other-id")
	if code != exitcode.Usage || !strings.Contains(stderr, "refusing to overwrite") {
		t.Errorf("overwrite: exit %d, %s", code, stderr)
	}
	if again, _ := os.ReadFile(out); !bytes.Equal(again, data) {
		t.Error("the existing manifest was modified")
	}
}

func TestCaptureRuntimeUsageErrors(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "m.json")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"capture-runtime", "--output", out}, "needs --python"},
		{[]string{"capture-runtime", "--python", "python3"}, "needs --output"},
		{[]string{"capture-runtime", "--python", "python3", "--output", out, "extra"}, "takes no arguments"},
		{[]string{"capture-runtime", "--python", filepath.Join(dir, "no-python"), "--output", out}, "cannot probe interpreter"},
		{[]string{"capture-runtime", "--python", "python3", "--output", out, "--id", "Bad ID"}, "invalid runtime manifest id"},
		{[]string{"capture-runtime", "--python", "python3", "--output", out, "--launch-implementation", filepath.Join(dir, "missing.py")}, "missing.py"},
		{[]string{"capture-runtime", "--no-such-flag"}, "flag provided but not defined"},
	} {
		code, _, stderr := runMain(tc.args...)
		if code != exitcode.Usage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want exit 2 and %q", tc.args, code, stderr, tc.want)
		}
		if _, err := os.Stat(out); err == nil {
			t.Fatalf("%q wrote %s", tc.args, out)
		}
	}
}

func TestWriteExclusive(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f.json")
	if err := writeExclusive(p, []byte("{}\n")); err != nil {
		t.Fatal(err)
	}
	if err := writeExclusive(p, []byte("x")); exitcode.Code(err) != exitcode.Usage {
		t.Errorf("existing file: %v", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "{}\n" {
		t.Errorf("content %q", b)
	}
	link := filepath.Join(t.TempDir(), "link.json")
	if err := os.Symlink(filepath.Join(t.TempDir(), "target.json"), link); err != nil {
		t.Fatal(err)
	}
	if err := writeExclusive(link, []byte("x")); err == nil {
		t.Error("a dangling symlink was followed")
	}
}

func TestDefaultID(t *testing.T) {
	for in, want := range map[string]string{"3.11.7": "python-3.11.7", "3.13.0rc1": "python-3.13.0rc1", "3.12.0+ (local)": "python-3.12.0-local"} {
		if got := defaultID(in); got != want {
			t.Errorf("defaultID(%q) = %q, want %q", in, got, want)
		}
	}
}
