package attest

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/qualkit/qualkit/schemas/evidence"
	"github.com/secure-systems-lab/go-securesystemslib/encrypted"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/sigstore/sigstore/pkg/signature/options"
)

// Key errors; match them with errors.Is.
var (
	// ErrEd25519: Ed25519 keys are refused. cosign's attest-blob signs Ed25519 DSSE envelopes with
	// Ed25519ph and then cannot verify them; keeping one algorithm (ECDSA P-256) keeps every
	// combination of qualrun, cosign and qualverify working.
	ErrEd25519 = errors.New("Ed25519 keys are refused: cosign attest-blob signs Ed25519 DSSE envelopes with Ed25519ph and cannot verify its own output, so mixed tooling breaks; use an ECDSA P-256 key (qualrun keygen or cosign generate-key-pair)")
	// ErrKeyType: the key is neither ECDSA P-256 nor Ed25519 (RSA, P-384, ...).
	ErrKeyType = errors.New("unsupported key type: attestation keys are ECDSA P-256")
	// ErrKeyFormat: the key file is not a PEM private key in a supported format.
	ErrKeyFormat = errors.New("unsupported key file")
	// ErrPassword: the password does not decrypt the key (or the key file is corrupted).
	ErrPassword = errors.New("wrong password for the encrypted key (or the key file is corrupted)")
	// ErrNoPassword: an encrypted key needs a password and none was given.
	ErrNoPassword = errors.New("the key is encrypted and no password was given: set QUALKIT_PASSWORD or COSIGN_PASSWORD, or give a password file")
	// ErrEmptyPassword: GenerateKeyPair refuses to encrypt with an empty password.
	ErrEmptyPassword = errors.New("empty password: an encrypted key needs a non-empty password (use an unencrypted key for CI)")
)

// Signer signs bytes with a private key that stays behind it (a key file, a KMS key). Sign receives
// the exact bytes to sign (the DSSE pre-authentication encoding) and returns the raw signature
// (ASN.1 DER for ECDSA, over SHA-256 of data).
type Signer interface {
	Sign(ctx context.Context, data []byte) ([]byte, error)
	PublicKey() crypto.PublicKey
}

// sigstoreSigner is a Signer backed by a sigstore signature.Signer.
type sigstoreSigner struct {
	s   signature.Signer
	pub crypto.PublicKey
}

func (s *sigstoreSigner) Sign(ctx context.Context, data []byte) ([]byte, error) {
	return s.s.SignMessage(bytes.NewReader(data), options.WithContext(ctx))
}

func (s *sigstoreSigner) PublicKey() crypto.PublicKey { return s.pub }

// NewSigner adapts a sigstore signer — a key loaded with sigstore's signature package, or a KMS
// key from its kms providers — to Signer. It reads the public key once; it must be ECDSA P-256
// and the signer must hash with SHA-256.
func NewSigner(ctx context.Context, s signature.Signer) (Signer, error) {
	pub, err := s.PublicKey(options.WithContext(ctx))
	if err != nil {
		return nil, fmt.Errorf("read the signer's public key: %w", err)
	}
	if err := checkPublicKey(pub); err != nil {
		return nil, err
	}
	return &sigstoreSigner{s: s, pub: pub}, nil
}

// checkPublicKey accepts ECDSA P-256 only.
func checkPublicKey(pub crypto.PublicKey) error {
	switch k := pub.(type) {
	case *ecdsa.PublicKey:
		if k.Curve == elliptic.P256() {
			return nil
		}
		return fmt.Errorf("%w: ECDSA on %s", ErrKeyType, k.Curve.Params().Name)
	case ed25519.PublicKey:
		return ErrEd25519
	default:
		return fmt.Errorf("%w: %T", ErrKeyType, pub)
	}
}

// PEM block types LoadSigner reads.
const (
	pemEncryptedSigstore = string(cryptoutils.EncryptedSigstorePrivateKeyPEMType) // cosign generate-key-pair, qualrun keygen
	pemEncryptedCosign   = "ENCRYPTED COSIGN PRIVATE KEY"                         // older cosign
	pemPKCS8             = string(cryptoutils.PrivateKeyPEMType)                  // unencrypted PKCS#8 (CI keys)
	pemSEC1              = string(cryptoutils.ECPrivateKeyPEMType)                // openssl ecparam -genkey
)

// LoadSigner reads a PEM private key file: cosign's encrypted format ("ENCRYPTED SIGSTORE PRIVATE
// KEY", or the older "ENCRYPTED COSIGN PRIVATE KEY"; password asks for the password only then),
// unencrypted PKCS#8 ("PRIVATE KEY") or SEC 1 ("EC PRIVATE KEY"). The key must be ECDSA P-256;
// Ed25519 is refused with ErrEd25519.
func LoadSigner(path string, password func() ([]byte, error)) (Signer, error) {
	data, err := evidence.ReadFileLimited(path, MaxKeyFileBytes)
	if err != nil {
		return nil, fmt.Errorf("read key %s: %w", path, err)
	}
	priv, err := parsePrivateKey(data, password)
	if err != nil {
		return nil, fmt.Errorf("key %s: %w", path, err)
	}
	var pub crypto.PublicKey
	switch k := priv.(type) {
	case *ecdsa.PrivateKey:
		pub = k.Public()
	case ed25519.PrivateKey:
		pub = k.Public()
	default:
		return nil, fmt.Errorf("key %s: %w: %T", path, ErrKeyType, priv)
	}
	if err := checkPublicKey(pub); err != nil {
		return nil, fmt.Errorf("key %s: %w", path, err)
	}
	sv, err := signature.LoadECDSASignerVerifier(priv.(*ecdsa.PrivateKey), crypto.SHA256)
	if err != nil {
		return nil, fmt.Errorf("key %s: %w", path, err)
	}
	return &sigstoreSigner{s: sv, pub: pub}, nil
}

func parsePrivateKey(data []byte, password func() ([]byte, error)) (crypto.PrivateKey, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, fmt.Errorf("%w: no PEM block", ErrKeyFormat)
	}
	switch block.Type {
	case pemPKCS8:
		k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("%w: PKCS#8: %v", ErrKeyFormat, err)
		}
		return k, nil
	case pemSEC1:
		k, err := x509.ParseECPrivateKey(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("%w: SEC 1: %v", ErrKeyFormat, err)
		}
		return k, nil
	case pemEncryptedSigstore, pemEncryptedCosign:
		// The block is a JSON container (scrypt KDF + NaCl secretbox) holding PKCS#8 DER. Check
		// its shape and algorithms first, so that a failed decryption can only mean a wrong password.
		var box struct {
			KDF struct {
				Name   string `json:"name"`
				Params struct {
					N, R, P int
				} `json:"params"`
			} `json:"kdf"`
			Cipher struct {
				Name string `json:"name"`
			} `json:"cipher"`
			Ciphertext []byte `json:"ciphertext"`
		}
		if err := json.Unmarshal(block.Bytes, &box); err != nil || len(box.Ciphertext) == 0 {
			return nil, fmt.Errorf("%w: %s block is not an encrypted key container", ErrKeyFormat, block.Type)
		}
		if box.KDF.Name != "scrypt" || box.Cipher.Name != "nacl/secretbox" || !knownScrypt(box.KDF.Params.N, box.KDF.Params.R, box.KDF.Params.P) {
			return nil, fmt.Errorf("%w: encrypted with kdf %q (N=%d r=%d p=%d) and cipher %q; cosign's format is scrypt (N=2^15, 2^16 or 2^17, r=8, p=1) + nacl/secretbox",
				ErrKeyFormat, box.KDF.Name, box.KDF.Params.N, box.KDF.Params.R, box.KDF.Params.P, box.Cipher.Name)
		}
		if password == nil {
			return nil, ErrNoPassword
		}
		pw, err := password()
		if err != nil {
			return nil, err
		}
		der, err := encrypted.Decrypt(block.Bytes, pw)
		if err != nil {
			return nil, fmt.Errorf("%w (%v)", ErrPassword, err)
		}
		k, err := x509.ParsePKCS8PrivateKey(der)
		if err != nil {
			return nil, fmt.Errorf("%w: decrypted key is not PKCS#8: %v", ErrKeyFormat, err)
		}
		return k, nil
	default:
		return nil, fmt.Errorf("%w: PEM block %q; supported: %q (cosign, encrypted), %q, %q (PKCS#8), %q",
			ErrKeyFormat, block.Type, pemEncryptedSigstore, pemEncryptedCosign, pemPKCS8, pemSEC1)
	}
}

// knownScrypt reports whether go-securesystemslib's encrypted package accepts these scrypt
// parameters (its legacy, standard and OWASP levels).
func knownScrypt(n, r, p int) bool {
	return (n == 1<<15 || n == 1<<16 || n == 1<<17) && r == 8 && p == 1
}

// PasswordFromEnv returns a password source for LoadSigner and keygen: the contents of
// passwordFile when it is not empty (one trailing newline removed), else $QUALKIT_PASSWORD, else
// $COSIGN_PASSWORD (cosign's own variable, so one habit serves both tools). A variable that is set
// but empty is an empty password. With none of them it fails with ErrNoPassword. Passwords are
// never taken from a flag value: those end up in shell history and process listings.
func PasswordFromEnv(passwordFile string) func() ([]byte, error) {
	return func() ([]byte, error) {
		if passwordFile != "" {
			b, err := evidence.ReadFileLimited(passwordFile, MaxPasswordFileBytes)
			if err != nil {
				return nil, fmt.Errorf("read password file: %w", err)
			}
			s := strings.TrimSuffix(string(b), "\n")
			s = strings.TrimSuffix(s, "\r")
			return []byte(s), nil
		}
		for _, name := range []string{"QUALKIT_PASSWORD", "COSIGN_PASSWORD"} {
			if v, ok := os.LookupEnv(name); ok {
				return []byte(v), nil
			}
		}
		return nil, ErrNoPassword
	}
}

// GenerateKeyPair writes a new ECDSA P-256 key pair that cosign reads as is: prefix.key (mode
// 0600) in cosign's encrypted format ("ENCRYPTED SIGSTORE PRIVATE KEY", scrypt + NaCl secretbox)
// when password is not nil, or as unencrypted PKCS#8 ("PRIVATE KEY") when it is nil; and
// prefix.pub, the PKIX public key PEM. Neither file may exist (ErrPath): keys are never replaced.
func GenerateKeyPair(prefix string, password []byte) error {
	if prefix == "" {
		return fmt.Errorf("%w: empty key prefix", ErrPath)
	}
	if password != nil && len(password) == 0 {
		return ErrEmptyPassword
	}
	keyPath, pubPath := prefix+".key", prefix+".pub"
	for _, p := range []string{keyPath, pubPath} {
		if _, err := os.Lstat(p); err == nil {
			return fmt.Errorf("%w: %s already exists; keys are never replaced", ErrPath, p)
		}
	}
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("generate key: %w", err)
	}
	var keyPEM []byte
	if password == nil {
		der, err := x509.MarshalPKCS8PrivateKey(priv)
		if err != nil {
			return fmt.Errorf("encode key: %w", err)
		}
		keyPEM = pem.EncodeToMemory(&pem.Block{Type: pemPKCS8, Bytes: der})
	} else {
		der, err := cryptoutils.MarshalPrivateKeyToEncryptedDER(priv, cryptoutils.StaticPasswordFunc(password))
		if err != nil {
			return fmt.Errorf("encrypt key: %w", err)
		}
		keyPEM = cryptoutils.PEMEncode(cryptoutils.EncryptedSigstorePrivateKeyPEMType, der)
	}
	pubPEM, err := cryptoutils.MarshalPublicKeyToPEM(priv.Public())
	if err != nil {
		return fmt.Errorf("encode public key: %w", err)
	}
	if err := evidence.WriteNew(keyPath, keyPEM, 0o600); err != nil {
		return err
	}
	if err := evidence.WriteNew(pubPath, pubPEM, 0o644); err != nil {
		os.Remove(keyPath) // ours, created a moment ago: no half pair is left behind
		return err
	}
	return nil
}

// ReadPublicKey reads a PEM public key file (PKIX "PUBLIC KEY", as prefix.pub and cosign.pub are
// written) and checks it is ECDSA P-256.
func ReadPublicKey(path string) (crypto.PublicKey, error) {
	data, err := evidence.ReadFileLimited(path, MaxKeyFileBytes)
	if err != nil {
		return nil, fmt.Errorf("read public key %s: %w", path, err)
	}
	pub, err := cryptoutils.UnmarshalPEMToPublicKey(data)
	if err != nil {
		return nil, fmt.Errorf("public key %s: %w: %v", path, ErrKeyFormat, err)
	}
	if err := checkPublicKey(pub); err != nil {
		return nil, fmt.Errorf("public key %s: %w", path, err)
	}
	return pub, nil
}

// KeyHint is the public key's hint as a Sigstore bundle carries it (and cosign writes it): the
// standard base64 of sha256 over the PKIX DER encoding.
func KeyHint(pub crypto.PublicKey) (string, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return "", fmt.Errorf("encode public key: %w", err)
	}
	h := sha256.Sum256(der)
	return base64.StdEncoding.EncodeToString(h[:]), nil
}
