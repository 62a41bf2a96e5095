package verify

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/verify/internal/compare"
	"github.com/qualkit/qualkit/verify/internal/gitobj"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
)

func TestParsePolicy(t *testing.T) {
	dir := t.TempDir()
	pub, _ := os.ReadFile(filepath.Join(frozenRoot, "frozen.pub"))
	mustWrite(t, filepath.Join(dir, "release.pub"), pub)
	cases := []struct {
		name, json string
		ok         bool
		check      func(t *testing.T, p Policy)
	}{
		{"empty: defaults, and no relaxation allowed", `{}`, true, func(t *testing.T, p Policy) {
			if !p.RequirePublishable || p.AllowedRelaxations == nil || len(p.AllowedRelaxations) != 0 || p.Recompute != (Tolerance{Absolute: DefaultRecomputeAbsolute, Relative: DefaultRecomputeRelative}) {
				t.Errorf("%+v", p)
			}
		}},
		{"full", `{"require_publishable": false, "public_keys": ["release.pub"], "allow_unsafe": ["allow-unsigned-unsafe"],
		  "tolerances": {"recompute": {"absolute": 0.001, "relative": 0}, "metrics": [{"metric": "ttft_ms.p50", "absolute_tolerance": 1, "relative_tolerance": 0.1}]}}`, true,
			func(t *testing.T, p Policy) {
				if p.RequirePublishable || len(p.Keys) != 1 || len(p.AllowedRelaxations) != 1 || p.Recompute.Absolute != 0.001 || len(p.Metrics) != 1 {
					t.Errorf("%+v", p)
				}
			}},
		{"unknown field", `{"require_publishable": true, "keys": []}`, false, nil},
		{"unknown relaxation", `{"allow_unsafe": ["allow-dirty-unsafe"]}`, false, nil},
		{"missing key file", `{"public_keys": ["nope.pub"]}`, false, nil},
		{"negative tolerance", `{"tolerances": {"recompute": {"absolute": -1, "relative": 0}}}`, false, nil},
		{"duplicate key", `{"require_publishable": true, "require_publishable": false}`, false, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := ParsePolicy([]byte(tc.json), dir)
			if (err == nil) != tc.ok {
				t.Fatalf("err %v, want ok %v", err, tc.ok)
			}
			if err != nil && !errors.Is(err, ErrPolicy) {
				t.Errorf("error %v does not wrap ErrPolicy", err)
			}
			if tc.check != nil {
				tc.check(t, p)
			}
		})
	}
}

func TestPolicyRefusesRelaxation(t *testing.T) {
	p := DefaultPolicy()
	p.Keys = newTestKey(t).policy().Keys
	p.AllowedRelaxations = []Relaxation{}
	ev, err := LocateIn(frozenRoot, filepath.Join(frozenRoot, frozenReceipts[0]))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Verify(context.Background(), ev, p, AllowUnsignedUnsafe()); !errors.Is(err, ErrRelaxationRefused) {
		t.Fatalf("err %v, want ErrRelaxationRefused", err)
	}
	if _, err := Verify(context.Background(), ev, DefaultPolicy()); !errors.Is(err, ErrNoTrustedKey) {
		t.Fatalf("err %v, want ErrNoTrustedKey", err)
	}
}

func TestParsePublicKey(t *testing.T) {
	p256, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	edPub, _, _ := ed25519.GenerateKey(rand.Reader)
	for _, tc := range []struct {
		name string
		pub  any
		ok   bool
	}{{"P-256", p256.Public(), true}, {"P-384", p384.Public(), false}, {"Ed25519", edPub, false}} {
		pem, err := cryptoutils.MarshalPublicKeyToPEM(tc.pub)
		if err != nil {
			t.Fatal(err)
		}
		_, err = ParsePublicKey(pem)
		if (err == nil) != tc.ok {
			t.Errorf("%s: err %v", tc.name, err)
		}
	}
	if _, err := ParsePublicKey([]byte("not a key")); err == nil {
		t.Error("garbage accepted")
	}
}

func TestLocate(t *testing.T) {
	root := t.TempDir()
	for _, p := range []string{"qualification/receipts/cpu/h/r.json", "qualification/receipts/cpu/h/r.intoto.dsse.json", ".qualification/receipts/s.json", ".qualification/receipts/s.sigstore.json", "elsewhere/x.json"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		mustWrite(t, filepath.Join(root, p), []byte("{}"))
	}
	cases := []struct {
		path string
		want Evidence
		err  bool
	}{
		{"qualification/receipts/cpu/h/r.json", Evidence{Root: root, Receipt: "qualification/receipts/cpu/h/r.json", Envelope: "qualification/receipts/cpu/h/r.intoto.dsse.json"}, false},
		{".qualification/receipts/s.json", Evidence{Root: root, Receipt: ".qualification/receipts/s.json", Bundle: ".qualification/receipts/s.sigstore.json"}, false},
		{"elsewhere/x.json", Evidence{}, true},
		{"qualification/receipts/cpu/h/r.intoto.dsse.json", Evidence{}, true},
	}
	for _, tc := range cases {
		got, err := Locate(filepath.Join(root, tc.path))
		if (err != nil) != tc.err || (err == nil && got != tc.want) {
			t.Errorf("Locate(%s) = %+v, %v; want %+v (error %v)", tc.path, got, err, tc.want, tc.err)
		}
		if err != nil && !errors.Is(err, ErrEvidence) {
			t.Errorf("Locate(%s): %v does not wrap ErrEvidence", tc.path, err)
		}
	}
	if _, err := LocateIn(root, filepath.Join(t.TempDir(), "x.json")); err == nil {
		t.Error("a receipt outside the root was accepted")
	}
}

func TestReadCheckout(t *testing.T) {
	head := strings.Repeat("a", 40)
	om := strings.Repeat("b", 40)
	write := func(root string, files map[string]string) {
		for p, c := range files {
			os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755)
			mustWrite(t, filepath.Join(root, p), []byte(c))
		}
	}
	loose := t.TempDir()
	write(loose, map[string]string{".git/HEAD": "ref: refs/heads/main\n", ".git/refs/heads/main": head + "\n", ".git/refs/remotes/origin/main": om + "\n"})
	packed := t.TempDir()
	write(packed, map[string]string{".git/HEAD": "ref: refs/heads/main\n", ".git/packed-refs": "# pack-refs with: peeled fully-peeled sorted\n" + head + " refs/heads/main\n" + om + " refs/remotes/origin/main\n"})
	detached := t.TempDir()
	write(detached, map[string]string{".git/HEAD": head + "\n"})
	worktree := t.TempDir()
	write(worktree, map[string]string{"gitdir/HEAD": head + "\n", "gitdir/commondir": "../common\n", "common/refs/remotes/origin/main": om + "\n"})
	wt := filepath.Join(worktree, "wt")
	write(wt, map[string]string{".git": "gitdir: " + filepath.Join(worktree, "gitdir") + "\n"})
	for _, tc := range []struct {
		name, root string
		want       *gitobj.Checkout
	}{
		{"loose refs", loose, &gitobj.Checkout{Head: head, OriginMain: om}},
		{"packed refs", packed, &gitobj.Checkout{Head: head, OriginMain: om}},
		{"detached, no origin", detached, &gitobj.Checkout{Head: head}},
		{"linked worktree", wt, &gitobj.Checkout{Head: head, OriginMain: om}},
		{"not a checkout", t.TempDir(), nil},
	} {
		got, err := gitobj.ReadCheckout(tc.root)
		if got != nil {
			got.CommonDir = "" // the object database directory is tested with real repositories
		}
		if err != nil || (got == nil) != (tc.want == nil) || (got != nil && *got != *tc.want) {
			t.Errorf("%s: %+v, %v; want %+v", tc.name, got, err, tc.want)
		}
	}
}

func TestRuleHolds(t *testing.T) {
	cases := []struct {
		op           contract.MetricRuleOperator
		b, c, ab, re float64
		want         bool
	}{
		{"equal", 10, 10, 0, 0, true},
		{"equal", 10, 10.5, 0, 0.05, true}, // tolerance max(0, 10 x 0.05) = 0.5
		{"equal", 10, 10.5000001, 0, 0.05, false},
		{"equal", 10, 9.5, 0.5, 0, true},
		{"not_greater", 10, 9, 0, 0, true},          // lower is fine
		{"not_greater", 10, 10.2, 0.1, 0.01, false}, // tolerance max(0.1, 0.1) = 0.1
		{"not_greater", 10, 12, 5, 0, true},
		{"not_less", 10, 11, 0, 0, true},
		{"not_less", 10, 8, 0, 0.2, true}, // 2 <= 2, exactly
		{"not_less", 10, 7.999999999, 0, 0.2, false},
		{"equal", 0.1, 0.30000000000000004 - 0.2, 0, 0, false}, // exact, no float fudge
		{"between", 1, 1, 0, 0, false},
	}
	for _, tc := range cases {
		got, v, tol := compare.RuleHolds(tc.op, tc.b, tc.c, tc.ab, tc.re)
		if got != tc.want {
			t.Errorf("%s(b=%v, c=%v, abs=%v, rel=%v) = %v (violation %v, tolerance %v), want %v", tc.op, tc.b, tc.c, tc.ab, tc.re, got, v, tol, tc.want)
		}
	}
}
