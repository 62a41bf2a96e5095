package oci

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/qualkit/qualkit/tools/internal/oci/ocitest"
	"oras.land/oras-go/v2/registry/remote/errcode"
)

func startHostile(t *testing.T, addr string) *ocitest.Hostile {
	t.Helper()
	h, stop, err := ocitest.Start(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return h
}

func startRecorder(t *testing.T, addr string, h *ocitest.Hostile) *ocitest.Recorder {
	t.Helper()
	var serve = ocitest.TokenRealm("tok")
	if h != nil {
		serve = h.Inner
	}
	r, stop, err := ocitest.StartRecorder(addr, serve)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return r
}

// publishFrozen pushes the frozen receipt to h (honest) and returns its reference by digest.
func publishFrozen(t *testing.T, h *ocitest.Hostile) Ref {
	t.Helper()
	pub, err := Publish(context.Background(), frozen, receiptA, mustRef(t, "oci://"+h.Host+"/fleet/r:t"), DefaultTransfer)
	if err != nil {
		t.Fatal(err)
	}
	return pub.Ref
}

func emptyDir(t *testing.T, dir string) {
	t.Helper()
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("%s holds %d entries after a refused pull", dir, len(ents))
	}
}

// TestPullTokenGoesOnlyToRegistry: a registry that demands a bearer token (from a loopback realm)
// redirects every blob to another loopback port. The pull succeeds (plain HTTP to loopback from a
// loopback registry), and the redirected requests carry no Authorization: net/http forwards it on
// a redirect to the same host name on another port.
func TestPullTokenGoesOnlyToRegistry(t *testing.T) {
	h := startHostile(t, "127.0.0.1:0")
	ref := publishFrozen(t, h)
	realm := startRecorder(t, "127.0.0.1:0", nil)
	blobs := startRecorder(t, "127.0.0.1:0", h)
	h.Set(func(h *ocitest.Hostile) { h.Realm, h.Token, h.RedirectBlobs = realm.URL+"/token", "tok", blobs.URL })
	if _, err := Pull(context.Background(), ref, t.TempDir(), DefaultLimits, DefaultTransfer); err != nil {
		t.Fatal(err)
	}
	if len(realm.Hits()) == 0 || len(blobs.Hits()) == 0 {
		t.Fatalf("realm hits %d, blob hits %d: the hostile paths were not taken", len(realm.Hits()), len(blobs.Hits()))
	}
	for _, hit := range blobs.Hits() {
		if hit.Authorization != "" {
			t.Errorf("the registry's token went to the redirect target %s: %s %q", blobs.URL, hit.Path, hit.Authorization)
		}
	}
}

// TestPullTooSlowAndDeadline: a registry that serves blobs a byte at a time is cut off by the
// minimum rate, and by the overall deadline, and the files written so far are removed.
func TestPullTooSlowAndDeadline(t *testing.T) {
	h := startHostile(t, "127.0.0.1:0")
	ref := publishFrozen(t, h)
	h.Set(func(h *ocitest.Hostile) { h.SlowBlobs = 200 * time.Millisecond })
	for _, tc := range []struct {
		name string
		tr   Transfer
		want error
	}{
		{"minimum rate", Transfer{MinRate: 1 << 10, Window: 500 * time.Millisecond}, ErrTooSlow},
		{"deadline", Transfer{Timeout: time.Second}, ErrDeadline},
	} {
		dest := t.TempDir()
		start := time.Now()
		_, err := Pull(context.Background(), ref, dest, DefaultLimits, tc.tr)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
		if d := time.Since(start); d > 20*time.Second {
			t.Errorf("%s: gave up after %s", tc.name, d)
		}
		emptyDir(t, dest)
	}
}

// TestPullRefusesLyingManifest: a registry that answers a manifest digest with other bytes.
func TestPullRefusesLyingManifest(t *testing.T) {
	h := startHostile(t, "127.0.0.1:0")
	ref := publishFrozen(t, h)
	h.Set(func(h *ocitest.Hostile) { h.LieManifest = []byte(`{"schemaVersion":2}`) })
	dest := t.TempDir()
	if _, err := Pull(context.Background(), ref, dest, DefaultLimits, DefaultTransfer); !errors.Is(err, ErrDigest) {
		t.Fatalf("%v, want ErrDigest", err)
	}
	emptyDir(t, dest)
}

func TestNetworkRules(t *testing.T) {
	for _, tc := range []struct {
		registry, target string
		ok               bool
	}{
		{"127.0.0.1:5000", "http://127.0.0.1:6000/x", true},
		{"127.0.0.1:5000", "http://[::1]:6000/x", true},
		{"127.0.0.1:5000", "https://cdn.example/x", true},
		{"127.0.0.1:5000", "http://10.0.0.1/x", false},
		{"127.0.0.1:5000", "http://cdn.example/x", false},
		{"ghcr.io", "http://127.0.0.1/x", false},
		{"ghcr.io", "http://cdn.example/x", false},
		{"ghcr.io", "https://cdn.example/x", true},
		{"ghcr.io", "ftp://cdn.example/x", false},
	} {
		g := &guard{registry: tc.registry, loopback: isLoopback(tc.registry)}
		u, _ := url.Parse(tc.target)
		err := g.allowed(u, "redirect")
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrNetPolicy)) {
			t.Errorf("registry %s, %s: %v, want allowed %v", tc.registry, tc.target, err, tc.ok)
		}
	}
}

const netnsEnv = "QUALKIT_TEST_IN_NETNS"

// inNetns runs the calling test again in a network namespace of its own (unshare -n: only
// loopback, brought up, with nonLoopback added to it), so that a redirect to a non-loopback
// address reaches nothing outside the machine. It returns true in the namespace; outside it runs
// the child and reports its result.
func inNetns(t *testing.T, nonLoopback string) bool {
	t.Helper()
	if os.Getenv(netnsEnv) == "1" {
		for _, args := range [][]string{{"link", "set", "lo", "up"}, {"addr", "add", nonLoopback + "/32", "dev", "lo"}} {
			if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
				t.Fatalf("ip %v: %v\n%s", args, err, out)
			}
		}
		return true
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("no unshare: the non-loopback redirect needs a network namespace")
	}
	if err := exec.Command("unshare", "-n", "true").Run(); err != nil {
		t.Skipf("unshare -n: %v: a network namespace cannot be made here (the rules are tested without contact in TestNetworkRules)", err)
	}
	cmd := exec.Command("unshare", "-n", os.Args[0], "-test.run=^"+t.Name()+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), netnsEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("in the network namespace: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "--- PASS") {
		t.Fatalf("in the network namespace, no pass:\n%s", out)
	}
	t.Logf("in a network namespace:\n%s", out)
	return false
}

// TestRegistryTrafficStaysOnLoopback: in a network namespace whose lo also holds 10.200.0.1, a
// loopback registry redirects blobs, names a token realm and hands out an upload location on
// 10.200.0.1 over plain HTTP. Each is refused (ErrNetPolicy) before it is sent: the server
// listening there sees no request.
func TestRegistryTrafficStaysOnLoopback(t *testing.T) {
	const far = "10.200.0.1"
	if !inNetns(t, far) {
		return
	}
	h := startHostile(t, "127.0.0.1:0")
	ref := publishFrozen(t, h)
	target := startRecorder(t, far+":0", h)
	for _, tc := range []struct {
		name string
		set  func(h *ocitest.Hostile)
		push bool
	}{
		{"blob redirect", func(h *ocitest.Hostile) { h.RedirectBlobs = target.URL }, false},
		{"token realm", func(h *ocitest.Hostile) { h.Realm, h.Token = target.URL+"/token", "tok" }, false},
		{"upload location", func(h *ocitest.Hostile) { h.UploadLocation = target.URL + "/upload" }, true},
	} {
		h.Set(func(h *ocitest.Hostile) { h.RedirectBlobs, h.Realm, h.Token, h.UploadLocation = "", "", "", "" })
		h.Set(tc.set)
		var err error
		if tc.push {
			// A fresh registry: it has none of the blobs, so the push starts uploads.
			fresh := startHostile(t, "127.0.0.1:0")
			fresh.Set(tc.set)
			_, err = Publish(context.Background(), frozen, receiptA, mustRef(t, "oci://"+fresh.Host+"/r:t"), DefaultTransfer)
		} else {
			dest := t.TempDir()
			_, err = Pull(context.Background(), ref, dest, DefaultLimits, DefaultTransfer)
			emptyDir(t, dest)
		}
		if !errors.Is(err, ErrNetPolicy) {
			t.Errorf("%s: %v, want ErrNetPolicy", tc.name, err)
		}
		if hits := target.Hits(); len(hits) != 0 {
			t.Errorf("%s: %s was contacted: %v", tc.name, far, hits)
		}
	}
}

// TestRegistryErrorTextClipped: a registry's error response (its JSON codes and messages, up to
// 8 KiB of its choosing) reaches the error message clipped and Go-quoted: no raw control byte, no
// more than 64 bytes of any message, and errors.Is still sees what the status means.
func TestRegistryErrorTextClipped(t *testing.T) {
	h := startHostile(t, "127.0.0.1:0")
	ref := publishFrozen(t, h)
	long := "\x1b[2J\x1b]0;owned\x07" + strings.Repeat("hunter2 ", 900)
	body, _ := json.Marshal(map[string]any{"errors": []map[string]string{{"code": "DENIED\x1b[31m", "message": long}}})
	h.Set(func(h *ocitest.Hostile) { h.ErrorBody = body })
	_, err := Pull(context.Background(), ref, t.TempDir(), DefaultLimits, DefaultTransfer)
	if err == nil {
		t.Fatal("pull succeeded")
	}
	msg := err.Error()
	if strings.ContainsAny(msg, "\x1b\x07") || strings.Count(msg, "hunter2") > 8 || len(msg) > 1024 {
		t.Fatalf("the registry's error text reached the message unclipped (%d bytes): %s", len(msg), msg)
	}
	var er *errcode.ErrorResponse
	if !errors.As(err, &er) || er.StatusCode != 400 {
		t.Fatalf("the error chain lost the response: %v", err)
	}
	t.Log(msg)
}

func TestParseRate(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "65536": 65536, "64KiB": 64 << 10, "64KiB/s": 64 << 10, "1MiB": 1 << 20, "2GiB/s": 2 << 30, "10KB": 10000, "5B": 5} {
		if got, err := ParseRate(in); err != nil || got != want {
			t.Errorf("ParseRate(%q) = %d, %v; want %d", in, got, err, want)
		}
		if got, _ := ParseRate(FormatRate(want)); got != want {
			t.Errorf("FormatRate(%d) = %q does not read back", want, FormatRate(want))
		}
	}
	for _, in := range []string{"", "-1", "fast", "1.5MiB", "64 KiB/h", "99999999999GiB"} {
		if _, err := ParseRate(in); err == nil {
			t.Errorf("ParseRate(%q) accepted", in)
		}
	}
}
