package keyless_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/qualkit/qualkit/attest"
	"github.com/qualkit/qualkit/attest/keyless"
	"github.com/qualkit/qualkit/attest/keyless/localsigstore"
	"github.com/sigstore/sigstore-go/pkg/root"
)

const workflow = "https://github.com/qualkit/qualkit/.github/workflows/release.yml@refs/heads/main"

var statement = []byte(`{"_type":"https://in-toto.io/Statement/v1","subject":[{"name":"r.json","digest":{"sha256":"` + strings.Repeat("a", 64) + `"}}],"predicateType":"https://qualkit.dev/x","predicate":{}}`)

type world struct {
	s    *localsigstore.Services
	root *root.TrustedRoot
}

func start(t *testing.T, o localsigstore.Options) world {
	t.Helper()
	s, err := localsigstore.Start(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	raw, err := s.TrustedRoot()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "trusted_root.json")
	if err := os.WriteFile(p, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	tr, err := keyless.LoadTrustedRoot(p)
	if err != nil {
		t.Fatal(err)
	}
	return world{s, tr}
}

func (w world) sign(t *testing.T, subject string, tsa bool) *keyless.Signed {
	t.Helper()
	tok, err := w.s.Token(subject, 5*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	o := keyless.Options{IDToken: tok, FulcioURL: w.s.FulcioURL, RekorURL: w.s.RekorURL}
	if tsa {
		o.TSAURL = w.s.TSAURL
	}
	signed, err := keyless.SignStatement(context.Background(), statement, o)
	if err != nil {
		t.Fatal(err)
	}
	return signed
}

func (w world) policy() keyless.Policy {
	return keyless.Policy{TrustedRoot: w.root, Identity: workflow, Issuer: w.s.IssuerURL}
}

func TestKeylessSignVerify(t *testing.T) {
	w := start(t, localsigstore.Options{})
	for _, tsa := range []bool{false, true} {
		signed := w.sign(t, workflow, tsa)
		if signed.Subject != workflow || signed.Issuer != w.s.IssuerURL {
			t.Fatalf("signed identity %+v", signed.Identity)
		}
		out, err := keyless.Verify(signed.Bundle, w.policy())
		if err != nil {
			t.Fatalf("tsa=%v: %v", tsa, err)
		}
		if string(out.Payload) != string(statement) || out.Subject != workflow || out.Issuer != w.s.IssuerURL {
			t.Fatalf("outcome %+v", out.Identity)
		}
		if want := 1 + map[bool]int{true: 1}[tsa]; len(out.SignedAt) != want {
			t.Errorf("tsa=%v: %d verified signing times, want %d", tsa, len(out.SignedAt), want)
		}
		if _, err := attest.VerifyEnvelope(signed.Envelope, out.PublicKey); err != nil {
			t.Errorf("the plain envelope does not verify with the certificate's key: %v", err)
		}
		var b map[string]any
		json.Unmarshal(signed.Bundle, &b)
		if b["mediaType"] != "application/vnd.dev.sigstore.bundle.v0.3+json" {
			t.Errorf("mediaType %v", b["mediaType"])
		}
	}
	// A regexp policy matches too.
	p := keyless.Policy{TrustedRoot: w.root, IdentityRegexp: `^https://github\.com/qualkit/qualkit/`, IssuerRegexp: `^http://127\.0\.0\.1:`}
	if _, err := keyless.Verify(w.sign(t, workflow, true).Bundle, p); err != nil {
		t.Fatal(err)
	}
	// An email identity.
	p = keyless.Policy{TrustedRoot: w.root, Identity: "release@example.org", Issuer: w.s.IssuerURL}
	if _, err := keyless.Verify(w.sign(t, "release@example.org", false).Bundle, p); err != nil {
		t.Fatal(err)
	}
}

// mutate edits a bundle's JSON.
func mutate(t *testing.T, b []byte, f func(tle map[string]any)) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	vm := m["verificationMaterial"].(map[string]any)
	f(vm["tlogEntries"].([]any)[0].(map[string]any))
	out, _ := json.Marshal(m)
	return out
}

func TestKeylessRefusals(t *testing.T) {
	w := start(t, localsigstore.Options{})
	other := start(t, localsigstore.Options{})
	expired := start(t, localsigstore.Options{CertShift: -time.Hour})
	good := w.sign(t, workflow, true)

	tests := []struct {
		name   string
		bundle []byte
		policy keyless.Policy
		want   error
	}{
		{"wrong identity", good.Bundle, keyless.Policy{TrustedRoot: w.root, Identity: workflow + "x", Issuer: w.s.IssuerURL}, keyless.ErrIdentity},
		{"wrong identity regexp", good.Bundle, keyless.Policy{TrustedRoot: w.root, IdentityRegexp: `^https://github\.com/evil/`, Issuer: w.s.IssuerURL}, keyless.ErrIdentity},
		{"wrong issuer", good.Bundle, keyless.Policy{TrustedRoot: w.root, Identity: workflow, Issuer: "https://token.actions.githubusercontent.com"}, keyless.ErrIssuer},
		{"outside validity (timestamp)", expired.sign(t, workflow, true).Bundle, expired.policy(), keyless.ErrCertificateValidity},
		{"outside validity (log time)", expired.sign(t, workflow, false).Bundle, expired.policy(), keyless.ErrCertificateValidity},
		{"missing inclusion proof", mutate(t, good.Bundle, func(e map[string]any) { delete(e, "inclusionProof") }), w.policy(), keyless.ErrInclusionProof},
		{"altered inclusion proof", mutate(t, good.Bundle, func(e map[string]any) {
			p := e["inclusionProof"].(map[string]any)
			p["rootHash"] = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="
		}), w.policy(), keyless.ErrInclusionProof},
		{"altered log index", mutate(t, good.Bundle, func(e map[string]any) {
			p := e["inclusionProof"].(map[string]any)
			p["logIndex"] = "7"
		}), w.policy(), keyless.ErrInclusionProof},
		{"no log entry", mutate(t, good.Bundle, func(e map[string]any) {
			e["logId"] = map[string]any{"keyId": "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="}
		}), w.policy(), keyless.ErrInclusionProof},
		{"another trusted root", other.sign(t, workflow, true).Bundle, w.policy(), keyless.ErrUntrustedRoot},
		{"timestamp of another authority", swapTimestamp(t, good.Bundle, other.sign(t, workflow, true).Bundle), w.policy(), keyless.ErrTimestamp},
		{"not a bundle", []byte(`{}`), w.policy(), keyless.ErrBundle},
		// Another file's bytes (a bundle path that was a symbolic link to a secret): refused
		// without quoting them (the JSON parser's own message did).
		{"another file's bytes", []byte("SECRET-VALUE-of-another-file\n"), w.policy(), keyless.ErrBundle},
		{"no policy identity", good.Bundle, keyless.Policy{TrustedRoot: w.root, Issuer: w.s.IssuerURL}, keyless.ErrPolicy},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := keyless.Verify(tt.bundle, tt.policy)
			if !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
			if strings.Contains(err.Error(), "SECRET-VALUE") {
				t.Errorf("the refusal quotes the input: %v", err)
			}
		})
	}
}

func TestCAVerifiesTheToken(t *testing.T) {
	w := start(t, localsigstore.Options{})
	other := start(t, localsigstore.Options{})
	for name, tok := range map[string]func() (string, error){
		"foreign issuer claim": func() (string, error) { return w.s.TokenFor(other.s.IssuerURL, workflow, time.Minute) },
		"other issuer's key":   func() (string, error) { return other.s.TokenFor(w.s.IssuerURL, workflow, time.Minute) },
		"expired":              func() (string, error) { return w.s.Token(workflow, -2*time.Minute) },
	} {
		t.Run(name, func(t *testing.T) {
			raw, err := tok()
			if err != nil {
				t.Fatal(err)
			}
			_, err = keyless.SignStatement(context.Background(), statement, keyless.Options{IDToken: raw, FulcioURL: w.s.FulcioURL, RekorURL: w.s.RekorURL})
			if !errors.Is(err, keyless.ErrSign) {
				t.Fatalf("got %v, want ErrSign", err)
			}
		})
	}
}

func TestTokenSources(t *testing.T) {
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }
	if _, err := keyless.Token(context.Background(), "", getenv); !errors.Is(err, keyless.ErrToken) {
		t.Fatalf("no source: %v", err)
	}
	gh := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer req-token" || r.URL.Query().Get("audience") != "sigstore" {
			http.Error(w, "no", http.StatusForbidden)
			return
		}
		w.Write([]byte(`{"value":"gh.jwt.token"}`))
	}))
	defer gh.Close()
	env[keyless.EnvGitHubRequestURL], env[keyless.EnvGitHubRequestAuth] = gh.URL+"/token?api-version=2.0", "req-token"
	if tok, err := keyless.Token(context.Background(), "", getenv); err != nil || tok != "gh.jwt.token" {
		t.Fatalf("github: %q %v", tok, err)
	}
	env[keyless.EnvSigstoreToken] = "env.jwt.token"
	if tok, _ := keyless.Token(context.Background(), "", getenv); tok != "env.jwt.token" {
		t.Fatalf("SIGSTORE_ID_TOKEN first: %q", tok)
	}
	f := filepath.Join(t.TempDir(), "token")
	os.WriteFile(f, []byte("file.jwt.token\n"), 0o600)
	if tok, _ := keyless.Token(context.Background(), f, getenv); tok != "file.jwt.token" {
		t.Fatalf("file first: %q", tok)
	}
}

// swapTimestamp puts from's RFC 3161 timestamp into b.
func swapTimestamp(t *testing.T, b, from []byte) []byte {
	t.Helper()
	var m, f map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(from, &f); err != nil {
		t.Fatal(err)
	}
	m["verificationMaterial"].(map[string]any)["timestampVerificationData"] = f["verificationMaterial"].(map[string]any)["timestampVerificationData"]
	out, _ := json.Marshal(m)
	return out
}
