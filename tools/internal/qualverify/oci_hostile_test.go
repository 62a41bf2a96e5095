package qualverify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/qualkit/qualkit/tools/internal/exitcode"
	"github.com/qualkit/qualkit/tools/internal/oci"
	"github.com/qualkit/qualkit/tools/internal/oci/ocitest"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/registry/remote"
)

const mainEnv = "QUALVERIFY_TEST_AS_MAIN"

// TestMain lets a test run qualverify as a real process: the test binary, started again with
// mainEnv set, is qualverify.
func TestMain(m *testing.M) {
	if os.Getenv(mainEnv) == "1" {
		os.Exit(Main(append([]string{"qualverify"}, os.Args[1:]...), os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// qualverifyCmd is qualverify args as a process, its temporary directory tmp.
func qualverifyCmd(tmp string, args ...string) (*exec.Cmd, *bytes.Buffer, *bytes.Buffer) {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), mainEnv+"=1", "TMPDIR="+tmp)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	return cmd, &stdout, &stderr
}

func runQualverify(t *testing.T, tmp string, args ...string) (int, string, string) {
	t.Helper()
	cmd, stdout, stderr := qualverifyCmd(tmp, args...)
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()
}

func pulledTrees(t *testing.T, tmp string) []string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(tmp, "qualverify-oci-*"))
	return m
}

// hostileRegistry publishes the frozen receipt to a hostile front on loopback and returns it, the
// artifact's reference by digest and its manifest.
func hostileRegistry(t *testing.T) (*ocitest.Hostile, string, ocispec.Manifest, *remote.Repository) {
	t.Helper()
	h, stop, err := ocitest.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	ref, _ := oci.ParseRef("oci://" + h.Host + "/fleet/a:v1")
	pub, err := oci.Publish(context.Background(), frozen, ".qualification/receipts/a-1.json", ref, oci.DefaultTransfer)
	if err != nil {
		t.Fatal(err)
	}
	repo, err := remote.NewRepository(h.Host + "/fleet/a")
	if err != nil {
		t.Fatal(err)
	}
	repo.PlainHTTP = true
	_, raw, err := fetchBytes(repo, pub.Digest)
	if err != nil {
		t.Fatal(err)
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return h, pub.Ref.String(), m, repo
}

func fetchBytes(repo *remote.Repository, dg string) (ocispec.Descriptor, []byte, error) {
	desc, rc, err := repo.FetchReference(context.Background(), dg)
	if err != nil {
		return desc, nil, err
	}
	defer rc.Close()
	b, err := content.ReadAll(rc, desc)
	return desc, b, err
}

// pushWith pushes m with an extra layer titled title holding data, and returns its reference.
func pushWith(t *testing.T, h *ocitest.Hostile, repo *remote.Repository, m ocispec.Manifest, title string, data []byte) string {
	t.Helper()
	ctx := context.Background()
	d := content.NewDescriptorFromBytes(oci.FileMediaType, data)
	if ok, _ := repo.Exists(ctx, d); !ok {
		if err := repo.Push(ctx, d, bytes.NewReader(data)); err != nil {
			t.Fatal(err)
		}
	}
	d.Annotations = map[string]string{ocispec.AnnotationTitle: title}
	m.Layers = append(append([]ocispec.Descriptor(nil), m.Layers...), d)
	raw, _ := json.Marshal(m)
	md := content.NewDescriptorFromBytes(ocispec.MediaTypeImageManifest, raw)
	if err := repo.Push(ctx, md, bytes.NewReader(raw)); err != nil {
		t.Fatal(err)
	}
	return "oci://" + h.Host + "/fleet/a@" + md.Digest.String()
}

// TestPulledGitMetadataNeverRead: the genuine signed receipt with one extra layer .git/HEAD, a
// symbolic ref out of the tree to a local file, is refused at the pull (exit 1, said on stdout in
// text and JSON, and by report); the file's bytes appear nowhere. The same .git/HEAD in a local
// evidence tree is not followed out of the git directory and not quoted either.
func TestPulledGitMetadataNeverRead(t *testing.T) {
	const secret = "QUALKIT_SECRET_hunter2"
	secretFile := filepath.Join(t.TempDir(), "environ")
	os.WriteFile(secretFile, []byte(secret+"\n"), 0o644)
	head := []byte("ref: " + strings.Repeat("../", 16) + strings.TrimPrefix(secretFile, "/") + "\n")
	h, _, m, repo := hostileRegistry(t)
	evil := pushWith(t, h, repo, m, ".git/HEAD", head)
	key := filepath.Join(frozen, "frozen.pub")
	tmp := t.TempDir()
	html := filepath.Join(t.TempDir(), "r.html")
	for _, args := range [][]string{
		{"verify", evil, "--key", key},
		{"verify", evil, "--key", key, "--json"},
		{"report", evil, "--key", key, "--format", "html", "-o", html},
	} {
		code, stdout, stderr := runQualverify(t, tmp, args...)
		t.Logf("%v: exit %d\n%s%s", args, code, stdout, stderr)
		page, _ := os.ReadFile(html)
		if code != exitcode.Rejected || strings.Contains(stdout+stderr+string(page), "hunter2") || !strings.Contains(stdout, "VCS metadata") {
			t.Errorf("%v: exit %d\nstdout:\n%s\nstderr:\n%s", args, code, stdout, stderr)
		}
		if n := len(pulledTrees(t, tmp)); n != 0 {
			t.Errorf("%v: %d pulled trees left", args, n)
		}
	}
	// The verifier's own layer: a local tree with the same .git/HEAD.
	root := t.TempDir()
	if err := os.CopyFS(root, os.DirFS(frozen)); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(root, ".git"), 0o755)
	os.WriteFile(filepath.Join(root, ".git", "HEAD"), head, 0o644)
	for _, json := range []bool{false, true} {
		args := []string{"verify", filepath.Join(root, ".qualification/receipts/a-1.json"), "--key", key}
		if json {
			args = append(args, "--json")
		}
		_, stdout, stderr := runQualverify(t, tmp, args...)
		if !json {
			t.Logf("%v:\n%s%s", args, stdout, stderr)
		}
		if strings.Contains(stdout+stderr, "hunter2") {
			t.Errorf("%v quotes the file a symbolic ref names:\n%s%s", args, stdout, stderr)
		}
		if !json && !strings.Contains(stdout, "git metadata") {
			t.Errorf("%v does not say the git metadata was not followed:\n%s%s", args, stdout, stderr)
		}
	}
}

// TestPullRefusalSaysWhy: every refusal of a pulled artifact exits 1 and says what was refused
// and why, on stdout, in text and with --json.
func TestPullRefusalSaysWhy(t *testing.T) {
	h, ref, m, repo := hostileRegistry(t)
	dotdot := pushWith(t, h, repo, m, "../escape", []byte("x"))
	key := filepath.Join(frozen, "frozen.pub")
	tmp := t.TempDir()
	for _, tc := range []struct {
		name, ref, why string
		set            func(h *ocitest.Hostile)
	}{
		{"dotdot title", dotdot, "clean relative path", func(h *ocitest.Hostile) {}},
		{"tampered blob", ref, "does not match its digest", func(h *ocitest.Hostile) { h.TamperBlobs = true }},
		{"lying digest", ref, "does not match its digest", func(h *ocitest.Hostile) { h.LieManifest = []byte(`{"schemaVersion":2}`) }},
	} {
		h.Set(func(h *ocitest.Hostile) { h.TamperBlobs, h.LieManifest = false, nil })
		h.Set(tc.set)
		for _, asJSON := range []bool{false, true} {
			args := []string{"verify", tc.ref, "--key", key}
			if asJSON {
				args = append(args, "--json")
			}
			code, stdout, stderr := runQualverify(t, tmp, args...)
			t.Logf("%s %v: exit %d\n%s%s", tc.name, args, code, stdout, stderr)
			if code != exitcode.Rejected || !strings.Contains(stdout, tc.why) {
				t.Errorf("%s %v: exit %d, want %d and %q on stdout\nstdout:\n%s\nstderr:\n%s", tc.name, args, code, exitcode.Rejected, tc.why, stdout, stderr)
				continue
			}
			if asJSON {
				var r struct{ Artifact, Verdict, Reason string }
				if err := json.Unmarshal([]byte(stdout), &r); err != nil || r.Verdict != "refused" || r.Artifact != tc.ref {
					t.Errorf("%s: --json printed %q (%v)", tc.name, stdout, err)
				}
			}
		}
	}
	if n := len(pulledTrees(t, tmp)); n != 0 {
		t.Errorf("%d pulled trees left", n)
	}
}

// TestPullInterruptedOrTooSlow: a registry that serves a byte a second. SIGINT or SIGTERM ends
// qualverify verify (exit 130) and removes the tree it was pulling into; --registry-timeout ends
// it (exit 3) and removes the tree too.
func TestPullInterruptedOrTooSlow(t *testing.T) {
	h, ref, _, _ := hostileRegistry(t)
	h.Set(func(h *ocitest.Hostile) { h.SlowBlobs = time.Second })
	key := filepath.Join(frozen, "frozen.pub")
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		tmp := t.TempDir()
		cmd, stdout, stderr := qualverifyCmd(tmp, "verify", ref, "--key", key)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(30 * time.Second)
		for !pullStarted(tmp) && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if !pullStarted(tmp) {
			cmd.Process.Kill()
			t.Fatalf("%v: no file was being pulled", sig)
		}
		cmd.Process.Signal(sig)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			<-done
			t.Fatalf("%v: qualverify did not end", sig)
		}
		if code := cmd.ProcessState.ExitCode(); code != exitcode.Interrupted || !strings.Contains(stderr.String(), "interrupted") {
			t.Errorf("%v: exit %d (state %v), want %d\nstdout:\n%s\nstderr:\n%s", sig, code, cmd.ProcessState, exitcode.Interrupted, stdout, stderr)
		}
		if n := pulledTrees(t, tmp); len(n) != 0 {
			t.Errorf("%v: pulled trees left: %v", sig, n)
		}
	}
	tmp := t.TempDir()
	start := time.Now()
	code, stdout, stderr := runQualverify(t, tmp, "verify", ref, "--key", key, "--registry-timeout", "1s")
	t.Logf("--registry-timeout 1s: exit %d\n%s%s", code, stdout, stderr)
	if code != exitcode.Internal || !strings.Contains(stderr, "deadline") || time.Since(start) > 20*time.Second {
		t.Errorf("--registry-timeout 1s: exit %d after %s\nstdout:\n%s\nstderr:\n%s", code, time.Since(start), stdout, stderr)
	}
	if n := pulledTrees(t, tmp); len(n) != 0 {
		t.Errorf("--registry-timeout: pulled trees left: %v", n)
	}
}

// pullStarted reports whether a pulled tree below tmp holds a file (a layer being written).
func pullStarted(tmp string) bool {
	found := false
	for _, d := range pulledTreesNoT(tmp) {
		filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
			if err == nil && e.Type().IsRegular() {
				found = true
			}
			return nil
		})
	}
	return found
}

func pulledTreesNoT(tmp string) []string {
	m, _ := filepath.Glob(filepath.Join(tmp, "qualverify-oci-*"))
	return m
}
