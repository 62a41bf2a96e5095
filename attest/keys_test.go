package attest_test

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qualkit/qualkit/attest"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
)

func pemFile(t *testing.T, dir, name, typ string, der []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	writeFile(t, p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}))
	return p
}

func pkcs8(t *testing.T, k crypto.PrivateKey) []byte {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return der
}

func encryptedDER(t *testing.T, k crypto.PrivateKey, pw string) []byte {
	t.Helper()
	der, err := cryptoutils.MarshalPrivateKeyToEncryptedDER(k, cryptoutils.StaticPasswordFunc([]byte(pw)))
	if err != nil {
		t.Fatal(err)
	}
	return der
}

func staticPassword(pw string) func() ([]byte, error) {
	return func() ([]byte, error) { return []byte(pw), nil }
}

func TestLoadSignerAccepts(t *testing.T) {
	dir := t.TempDir()
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	sec1, _ := x509.MarshalECPrivateKey(ec)
	for _, tc := range []struct {
		name string
		path string
		pw   func() ([]byte, error)
	}{
		{"unencrypted PKCS#8", pemFile(t, dir, "p8.key", "PRIVATE KEY", pkcs8(t, ec)), nil},
		{"SEC 1", pemFile(t, dir, "sec1.key", "EC PRIVATE KEY", sec1), nil},
		{"cosign encrypted", pemFile(t, dir, "enc.key", "ENCRYPTED SIGSTORE PRIVATE KEY", encryptedDER(t, ec, "pw")), staticPassword("pw")},
		{"older cosign encrypted", pemFile(t, dir, "old.key", "ENCRYPTED COSIGN PRIVATE KEY", encryptedDER(t, ec, "pw")), staticPassword("pw")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := attest.LoadSigner(tc.path, tc.pw)
			if err != nil {
				t.Fatal(err)
			}
			if !ec.PublicKey.Equal(s.PublicKey()) {
				t.Fatal("public key differs from the key written")
			}
			sig, err := s.Sign(context.Background(), []byte("data"))
			if err != nil {
				t.Fatal(err)
			}
			v, _ := signature.LoadVerifier(&ec.PublicKey, crypto.SHA256)
			if err := v.VerifySignature(bytes.NewReader(sig), bytes.NewReader([]byte("data"))); err != nil {
				t.Fatalf("signature does not verify: %v", err)
			}
		})
	}
}

func TestLoadSignerRejects(t *testing.T) {
	dir := t.TempDir()
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	_, ed, _ := ed25519.GenerateKey(rand.Reader)
	rsaKey, _ := rsa.GenerateKey(rand.Reader, 2048)
	enc := pemFile(t, dir, "enc.key", "ENCRYPTED SIGSTORE PRIVATE KEY", encryptedDER(t, ec, "right"))
	for _, tc := range []struct {
		name string
		path string
		pw   func() ([]byte, error)
		want error
	}{
		{"Ed25519 PKCS#8", pemFile(t, dir, "ed.key", "PRIVATE KEY", pkcs8(t, ed)), nil, attest.ErrEd25519},
		{"Ed25519 cosign encrypted", pemFile(t, dir, "ed-enc.key", "ENCRYPTED SIGSTORE PRIVATE KEY", encryptedDER(t, ed, "pw")), staticPassword("pw"), attest.ErrEd25519},
		{"ECDSA P-384", pemFile(t, dir, "p384.key", "PRIVATE KEY", pkcs8(t, p384)), nil, attest.ErrKeyType},
		{"RSA", pemFile(t, dir, "rsa.key", "PRIVATE KEY", pkcs8(t, rsaKey)), nil, attest.ErrKeyType},
		{"wrong password", enc, staticPassword("wrong"), attest.ErrPassword},
		{"no password source", enc, nil, attest.ErrNoPassword},
		{"password unset in the environment", enc, func() ([]byte, error) { return nil, attest.ErrNoPassword }, attest.ErrNoPassword},
		{"not PEM", writeTemp(t, dir, "junk.key", "not a key"), nil, attest.ErrKeyFormat},
		{"public key instead of private", pemFile(t, dir, "pub.key", "PUBLIC KEY", []byte("x")), nil, attest.ErrKeyFormat},
		{"broken PKCS#8", pemFile(t, dir, "bad.key", "PRIVATE KEY", []byte("x")), nil, attest.ErrKeyFormat},
		{"encrypted block that is no container", pemFile(t, dir, "box.key", "ENCRYPTED SIGSTORE PRIVATE KEY", []byte("{}")), staticPassword("pw"), attest.ErrKeyFormat},
		{"encrypted with unknown scrypt parameters", pemFile(t, dir, "kdf.key", "ENCRYPTED SIGSTORE PRIVATE KEY",
			[]byte(`{"kdf":{"name":"scrypt","params":{"N":1024,"r":8,"p":1},"salt":"AA=="},"cipher":{"name":"nacl/secretbox","nonce":"AA=="},"ciphertext":"AA=="}`)), staticPassword("pw"), attest.ErrKeyFormat},
		{"missing file", filepath.Join(dir, "none.key"), nil, os.ErrNotExist},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := attest.LoadSigner(tc.path, tc.pw)
			if !errors.Is(err, tc.want) {
				t.Fatalf("error %v, want %v", err, tc.want)
			}
		})
	}
}

func writeTemp(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	writeFile(t, p, []byte(content))
	return p
}

func TestEd25519RefusalSaysWhy(t *testing.T) {
	for _, want := range []string{"Ed25519ph", "cosign", "P-256"} {
		if !strings.Contains(attest.ErrEd25519.Error(), want) {
			t.Errorf("ErrEd25519 %q does not mention %s", attest.ErrEd25519, want)
		}
	}
}

func TestPasswordFromEnv(t *testing.T) {
	dir := t.TempDir()
	file := writeTemp(t, dir, "pw", "from-file\n")
	crlf := writeTemp(t, dir, "pw-crlf", "crlf\r\n")
	for _, tc := range []struct {
		name      string
		file      string
		qualkit   *string
		cosign    *string
		want      string
		wantError error
	}{
		{name: "file wins over the environment", file: file, qualkit: ptr("q"), cosign: ptr("c"), want: "from-file"},
		{name: "CRLF file", file: crlf, want: "crlf"},
		{name: "QUALKIT_PASSWORD before COSIGN_PASSWORD", qualkit: ptr("q"), cosign: ptr("c"), want: "q"},
		{name: "COSIGN_PASSWORD", cosign: ptr("c"), want: "c"},
		{name: "set but empty", qualkit: ptr(""), cosign: ptr("c"), want: ""},
		{name: "nothing", wantError: attest.ErrNoPassword},
		{name: "missing file", file: filepath.Join(dir, "none"), wantError: os.ErrNotExist},
	} {
		t.Run(tc.name, func(t *testing.T) {
			setEnv(t, "QUALKIT_PASSWORD", tc.qualkit)
			setEnv(t, "COSIGN_PASSWORD", tc.cosign)
			got, err := attest.PasswordFromEnv(tc.file)()
			if tc.wantError != nil {
				if !errors.Is(err, tc.wantError) {
					t.Fatalf("error %v, want %v", err, tc.wantError)
				}
				return
			}
			if err != nil || string(got) != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func ptr(s string) *string { return &s }

// setEnv sets (or, for nil, unsets) an environment variable for the test.
func setEnv(t *testing.T, name string, v *string) {
	t.Setenv(name, "") // restores the old value after the test
	if v == nil {
		os.Unsetenv(name)
	} else {
		os.Setenv(name, *v)
	}
}

func TestGenerateKeyPair(t *testing.T) {
	for _, tc := range []struct {
		name     string
		password []byte
		pemType  string
	}{
		{"unencrypted", nil, "PRIVATE KEY"},
		{"encrypted", []byte("s3cret"), "ENCRYPTED SIGSTORE PRIVATE KEY"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prefix := filepath.Join(t.TempDir(), "qual")
			if err := attest.GenerateKeyPair(prefix, tc.password); err != nil {
				t.Fatal(err)
			}
			st, err := os.Stat(prefix + ".key")
			if err != nil {
				t.Fatal(err)
			}
			if st.Mode().Perm() != 0o600 {
				t.Errorf("key mode %v, want 0600", st.Mode().Perm())
			}
			raw, _ := os.ReadFile(prefix + ".key")
			if b, _ := pem.Decode(raw); b == nil || b.Type != tc.pemType {
				t.Fatalf("key file is not a %q PEM block:\n%s", tc.pemType, raw)
			}
			pubPEM, _ := os.ReadFile(prefix + ".pub")
			pub, err := cryptoutils.UnmarshalPEMToPublicKey(pubPEM)
			if err != nil {
				t.Fatal(err)
			}
			// cosign's own loader reads the key (this is what cosign attest-blob --key does).
			pf := cryptoutils.StaticPasswordFunc(tc.password)
			if tc.password == nil {
				pf = nil
			}
			sv, err := signature.LoadSignerVerifierFromPEMFile(prefix+".key", crypto.SHA256, pf)
			if err != nil {
				t.Fatalf("sigstore cannot load the key: %v", err)
			}
			if svPub, _ := sv.PublicKey(); !pub.(*ecdsa.PublicKey).Equal(svPub) {
				t.Fatal(".pub does not match .key")
			}
			s, err := attest.LoadSigner(prefix+".key", func() ([]byte, error) { return tc.password, nil })
			if err != nil {
				t.Fatal(err)
			}
			if !pub.(*ecdsa.PublicKey).Equal(s.PublicKey()) {
				t.Fatal("LoadSigner's public key does not match .pub")
			}
		})
	}
}

func TestGenerateKeyPairRejects(t *testing.T) {
	t.Run("existing key", func(t *testing.T) {
		prefix := filepath.Join(t.TempDir(), "qual")
		writeFile(t, prefix+".key", []byte("old"))
		if err := attest.GenerateKeyPair(prefix, nil); !errors.Is(err, attest.ErrPath) {
			t.Fatalf("error %v, want ErrPath", err)
		}
		if raw, _ := os.ReadFile(prefix + ".key"); string(raw) != "old" {
			t.Error("existing key was replaced")
		}
		if _, err := os.Stat(prefix + ".pub"); err == nil {
			t.Error(".pub written beside a refused key")
		}
	})
	t.Run("existing public key", func(t *testing.T) {
		prefix := filepath.Join(t.TempDir(), "qual")
		writeFile(t, prefix+".pub", []byte("old"))
		if err := attest.GenerateKeyPair(prefix, nil); !errors.Is(err, attest.ErrPath) {
			t.Fatalf("error %v, want ErrPath", err)
		}
		if _, err := os.Stat(prefix + ".key"); err == nil {
			t.Error(".key written beside a refused .pub")
		}
	})
	t.Run("dangling symlink at the key name", func(t *testing.T) {
		prefix := filepath.Join(t.TempDir(), "qual")
		if err := os.Symlink(prefix+".elsewhere", prefix+".key"); err != nil {
			t.Fatal(err)
		}
		if err := attest.GenerateKeyPair(prefix, nil); !errors.Is(err, attest.ErrPath) {
			t.Fatalf("error %v, want ErrPath", err)
		}
		if _, err := os.Lstat(prefix + ".elsewhere"); err == nil {
			t.Error("key written through the symlink")
		}
	})
	t.Run("empty password", func(t *testing.T) {
		prefix := filepath.Join(t.TempDir(), "qual")
		if err := attest.GenerateKeyPair(prefix, []byte{}); !errors.Is(err, attest.ErrEmptyPassword) {
			t.Fatalf("error %v, want ErrEmptyPassword", err)
		}
	})
	t.Run("empty prefix", func(t *testing.T) {
		if err := attest.GenerateKeyPair("", nil); !errors.Is(err, attest.ErrPath) {
			t.Fatalf("error %v, want ErrPath", err)
		}
	})
}

func TestNewSignerWrapsSigstoreSigners(t *testing.T) {
	ctx := context.Background()
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	sv, _ := signature.LoadECDSASignerVerifier(ec, crypto.SHA256)
	s, err := attest.NewSigner(ctx, sv)
	if err != nil {
		t.Fatal(err)
	}
	if !ec.PublicKey.Equal(s.PublicKey()) {
		t.Fatal("public key differs")
	}
	_, ed, _ := ed25519.GenerateKey(rand.Reader)
	edsv, _ := signature.LoadED25519SignerVerifier(ed)
	if _, err := attest.NewSigner(ctx, edsv); !errors.Is(err, attest.ErrEd25519) {
		t.Fatalf("Ed25519 signer: error %v, want ErrEd25519", err)
	}
	rsaKey, _ := rsa.GenerateKey(rand.Reader, 2048)
	rsv, _ := signature.LoadRSAPKCS1v15SignerVerifier(rsaKey, crypto.SHA256)
	if _, err := attest.NewSigner(ctx, rsv); !errors.Is(err, attest.ErrKeyType) {
		t.Fatalf("RSA signer: error %v, want ErrKeyType", err)
	}
}
