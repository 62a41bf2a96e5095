// Package localsigstore serves the smallest faithful stand-ins of the public Sigstore services on
// loopback, for tests and `qualsim sigstore`: an OIDC issuer (discovery document, JWKS, ES256 ID
// tokens), a Fulcio-API CA (POST /api/v2/signingCert: it verifies the bearer token with go-oidc
// against that issuer, checks the proof of possession, and issues a real X.509 code-signing
// certificate with Fulcio's issuer extensions and an embedded SCT signed by a CT log key), a Rekor
// v1 log (POST /api/v1/log/entries: Rekor's own types canonicalize the proposed entry, an RFC 6962
// Merkle tree gives the inclusion proof, the log key signs the checkpoint and the signed entry
// timestamp), and an RFC 3161 timestamp authority (POST /api/v1/timestamp). TrustedRoot returns the
// trusted_root.json that names exactly these keys and certificates.
//
// Each service listens on its own 127.0.0.1 port. Nothing here reaches another host.
package localsigstore

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/digitorus/timestamp"
	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/go-openapi/runtime"
	"github.com/go-openapi/strfmt"
	ct "github.com/google/certificate-transparency-go"
	cttls "github.com/google/certificate-transparency-go/tls"
	ctx509 "github.com/google/certificate-transparency-go/x509"
	"github.com/sigstore/rekor/pkg/generated/models"
	"github.com/sigstore/rekor/pkg/types"
	_ "github.com/sigstore/rekor/pkg/types/dsse/v0.0.1" // the dsse entry kind sigstore-go proposes
	_ "github.com/sigstore/rekor/pkg/types/hashedrekord/v0.0.1"
	"github.com/sigstore/rekor/pkg/util"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
)

// Audience is the audience the CA requires of ID tokens, as the public Fulcio does.
const Audience = "sigstore"

// Options shape the services.
type Options struct {
	// CertValidity is how long issued certificates are valid (Fulcio: 10 minutes); 0 means 10m.
	CertValidity time.Duration
	// CertShift moves every issued certificate's validity window by this much (negative: a window
	// that ended before the certificate was used, for tests of certificates outside their validity).
	CertShift time.Duration
}

// Services are the running stand-ins.
type Services struct {
	IssuerURL, FulcioURL, RekorURL, TSAURL string

	opts      Options
	servers   []*http.Server
	caKey     *ecdsa.PrivateKey
	caCert    *x509.Certificate
	interKey  *ecdsa.PrivateKey
	interCert *x509.Certificate
	ctKey     *ecdsa.PrivateKey
	rekorKey  *ecdsa.PrivateKey
	tsaKey    *ecdsa.PrivateKey
	tsaCert   *x509.Certificate
	oidcKey   *ecdsa.PrivateKey
	start     time.Time

	mu     sync.Mutex
	leaves [][]byte // the Rekor log's leaf hashes
	serial int64
}

// Start generates fresh keys and a CA, and serves the four services on loopback ports.
func Start(opts Options) (*Services, error) {
	if opts.CertValidity == 0 {
		opts.CertValidity = 10 * time.Minute
	}
	s := &Services{opts: opts, start: time.Now().Add(-time.Minute).Truncate(time.Second)}
	var err error
	keys := []**ecdsa.PrivateKey{&s.caKey, &s.interKey, &s.ctKey, &s.rekorKey, &s.tsaKey, &s.oidcKey}
	for _, k := range keys {
		if *k, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
			return nil, err
		}
	}
	notAfter := s.start.Add(365 * 24 * time.Hour)
	s.caCert, err = certificate(&x509.Certificate{
		Subject: pkix.Name{CommonName: "qualkit local sigstore root", Organization: []string{"qualkit"}}, NotBefore: s.start.Add(-48 * time.Hour), NotAfter: notAfter,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign, BasicConstraintsValid: true, IsCA: true,
	}, nil, &s.caKey.PublicKey, s.caKey)
	if err != nil {
		return nil, err
	}
	s.interCert, err = certificate(&x509.Certificate{
		Subject: pkix.Name{CommonName: "qualkit local fulcio intermediate", Organization: []string{"qualkit"}}, NotBefore: s.start.Add(-48 * time.Hour), NotAfter: notAfter,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning}, BasicConstraintsValid: true, IsCA: true, MaxPathLenZero: true,
	}, s.caCert, &s.interKey.PublicKey, s.caKey)
	if err != nil {
		return nil, err
	}
	tsEKU, _ := asn1.Marshal([]asn1.ObjectIdentifier{{1, 3, 6, 1, 5, 5, 7, 3, 8}})
	s.tsaCert, err = certificate(&x509.Certificate{
		Subject: pkix.Name{CommonName: "qualkit local timestamp authority", Organization: []string{"qualkit"}}, NotBefore: s.start.Add(-48 * time.Hour), NotAfter: notAfter,
		KeyUsage:        x509.KeyUsageDigitalSignature,
		ExtraExtensions: []pkix.Extension{{Id: asn1.ObjectIdentifier{2, 5, 29, 37}, Critical: true, Value: tsEKU}},
	}, s.caCert, &s.tsaKey.PublicKey, s.caKey)
	if err != nil {
		return nil, err
	}
	handlers := []struct {
		url *string
		h   http.Handler
	}{
		{&s.IssuerURL, s.issuerMux()},
		{&s.FulcioURL, http.HandlerFunc(s.fulcio)},
		{&s.RekorURL, http.HandlerFunc(s.rekor)},
		{&s.TSAURL, http.HandlerFunc(s.tsa)},
	}
	for _, h := range handlers {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			s.Close()
			return nil, err
		}
		*h.url = "http://" + ln.Addr().String()
		srv := &http.Server{Handler: http.MaxBytesHandler(h.h, 1<<20), ReadHeaderTimeout: 10 * time.Second}
		s.servers = append(s.servers, srv)
		go srv.Serve(ln)
	}
	s.TSAURL += "/api/v1/timestamp"
	return s, nil
}

// Close stops every service.
func (s *Services) Close() {
	for _, srv := range s.servers {
		srv.Close()
	}
}

func certificate(tmpl, parent *x509.Certificate, pub any, key crypto.Signer) (*x509.Certificate, error) {
	if tmpl.SerialNumber == nil {
		n, err := rand.Int(rand.Reader, big.NewInt(1<<62))
		if err != nil {
			return nil, err
		}
		tmpl.SerialNumber = n
	}
	if parent == nil {
		parent = tmpl
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, pub, key)
	if err != nil {
		return nil, err
	}
	return x509.ParseCertificate(der)
}

// TrustedRoot returns the trusted_root.json of these services.
func (s *Services) TrustedRoot() ([]byte, error) {
	end := s.start.Add(365 * 24 * time.Hour)
	ca := &root.FulcioCertificateAuthority{Root: s.caCert, Intermediates: []*x509.Certificate{s.interCert}, ValidityPeriodStart: s.start.Add(-48 * time.Hour), ValidityPeriodEnd: end, URI: s.FulcioURL}
	tsa := &root.SigstoreTimestampingAuthority{Root: s.caCert, Leaf: s.tsaCert, ValidityPeriodStart: s.start.Add(-48 * time.Hour), ValidityPeriodEnd: end, URI: s.TSAURL}
	logs := map[string]*root.TransparencyLog{}
	ctlogs := map[string]*root.TransparencyLog{}
	for _, l := range []struct {
		m   map[string]*root.TransparencyLog
		key *ecdsa.PrivateKey
		url string
	}{{logs, s.rekorKey, s.RekorURL}, {ctlogs, s.ctKey, "http://127.0.0.1/ct"}} {
		id := logID(&l.key.PublicKey)
		l.m[hex.EncodeToString(id)] = &root.TransparencyLog{BaseURL: l.url, ID: id, ValidityPeriodStart: s.start.Add(-48 * time.Hour),
			HashFunc: crypto.SHA256, PublicKey: &l.key.PublicKey, SignatureHashFunc: crypto.SHA256}
	}
	tr, err := root.NewTrustedRoot(root.TrustedRootMediaType01, []root.CertificateAuthority{ca}, ctlogs, []root.TimestampingAuthority{tsa}, logs)
	if err != nil {
		return nil, err
	}
	return json.MarshalIndent(tr, "", "  ")
}

func logID(pub crypto.PublicKey) []byte {
	der, _ := x509.MarshalPKIXPublicKey(pub)
	sum := sha256.Sum256(der)
	return sum[:]
}

// ---- OIDC issuer

func (s *Services) issuerMux() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{
			"issuer": s.IssuerURL, "jwks_uri": s.IssuerURL + "/jwks", "id_token_signing_alg_values_supported": []string{"ES256"},
			"response_types_supported": []string{"id_token"}, "subject_types_supported": []string{"public"},
		})
	})
	mux.HandleFunc("GET /jwks", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &s.oidcKey.PublicKey, KeyID: "local", Algorithm: "ES256", Use: "sig"}}})
	})
	return mux
}

// Token returns an ID token of the issuer for subject: a URI subject (a CI workflow, say
// "https://github.com/org/repo/.github/workflows/release.yml@refs/heads/main") becomes the
// certificate's URI SAN, an address with '@' and no scheme its email SAN.
func (s *Services) Token(subject string, ttl time.Duration) (string, error) {
	return s.TokenFor(s.IssuerURL, subject, ttl)
}

// TokenFor signs a token that claims issuer iss (which the CA accepts only when it is its own).
func (s *Services) TokenFor(iss, subject string, ttl time.Duration) (string, error) {
	sig, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: s.oidcKey}, (&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", "local"))
	if err != nil {
		return "", err
	}
	now := time.Now()
	claims := map[string]any{"iss": iss, "sub": subject, "aud": Audience, "iat": now.Unix(), "nbf": now.Add(-time.Minute).Unix(), "exp": now.Add(ttl).Unix()}
	if isEmail(subject) {
		claims["email"], claims["email_verified"] = subject, true
	}
	return jwt.Signed(sig).Claims(claims).Serialize()
}

func isEmail(s string) bool { return !strings.Contains(s, "://") && strings.Contains(s, "@") }

// ---- Fulcio

var (
	oidIssuer   = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 57264, 1, 1}
	oidIssuerV2 = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 57264, 1, 8}
	oidSCTList  = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 11129, 2, 4, 2}
)

func (s *Services) fulcio(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/api/v2/signingCert" {
		http.NotFound(w, r)
		return
	}
	raw, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"message": "no bearer token"})
		return
	}
	provider, err := oidc.NewProvider(r.Context(), s.IssuerURL)
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]string{"message": err.Error()})
		return
	}
	tok, err := provider.Verifier(&oidc.Config{ClientID: Audience}).Verify(r.Context(), raw)
	if err != nil {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"message": "the identity token does not verify: " + err.Error()})
		return
	}
	var claims struct {
		Email         string `json:"email"`
		EmailVerified bool   `json:"email_verified"`
	}
	if err := tok.Claims(&claims); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"message": err.Error()})
		return
	}
	var req struct {
		PublicKeyRequest struct {
			PublicKey struct {
				Content string `json:"content"`
			} `json:"publicKey"`
			ProofOfPossession string `json:"proofOfPossession"`
		} `json:"publicKeyRequest"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"message": err.Error()})
		return
	}
	blk, _ := pem.Decode([]byte(req.PublicKeyRequest.PublicKey.Content))
	if blk == nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"message": "public key is not PEM"})
		return
	}
	pub, err := x509.ParsePKIXPublicKey(blk.Bytes)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"message": err.Error()})
		return
	}
	subject := tok.Subject
	tmpl := &x509.Certificate{KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning}}
	switch {
	case claims.Email != "" && claims.EmailVerified:
		subject = claims.Email
		tmpl.EmailAddresses = []string{claims.Email}
	case strings.Contains(subject, "://"):
		u, err := url.Parse(subject)
		if err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"message": "subject: " + err.Error()})
			return
		}
		tmpl.URIs = []*url.URL{u}
	default:
		writeJSON(w, http.StatusBadRequest, map[string]string{"message": "the token has neither a verified email nor a URI subject"})
		return
	}
	pop, err := base64.StdEncoding.DecodeString(req.PublicKeyRequest.ProofOfPossession)
	if err != nil || !verifyPOP(pub, subject, pop) {
		writeJSON(w, http.StatusBadRequest, map[string]string{"message": "the proof of possession does not verify"})
		return
	}
	chain, err := s.issue(tmpl, pub, tok.Issuer)
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]string{"message": err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"signedCertificateEmbeddedSct": map[string]any{"chain": map[string]any{"certificates": chain}}})
}

func verifyPOP(pub crypto.PublicKey, subject string, sig []byte) bool {
	v, err := signature.LoadVerifier(pub, crypto.SHA256)
	return err == nil && v.VerifySignature(bytes.NewReader(sig), strings.NewReader(subject)) == nil
}

// issue signs a certificate for pub with the issuer extensions and an embedded SCT, and returns
// the PEM chain leaf first.
func (s *Services) issue(tmpl *x509.Certificate, pub crypto.PublicKey, issuer string) ([]string, error) {
	s.mu.Lock()
	s.serial++
	tmpl.SerialNumber = big.NewInt(s.serial)
	s.mu.Unlock()
	now := time.Now().Add(s.opts.CertShift)
	tmpl.NotBefore, tmpl.NotAfter = now.Add(-time.Second), now.Add(s.opts.CertValidity)
	issuerV2, err := asn1.MarshalWithParams(issuer, "utf8")
	if err != nil {
		return nil, err
	}
	tmpl.ExtraExtensions = []pkix.Extension{{Id: oidIssuer, Value: []byte(issuer)}, {Id: oidIssuerV2, Value: issuerV2}}
	// The precertificate TBS: the final certificate's TBS without the SCT list, which is the
	// extension added last.
	pre, err := certificate(tmpl, s.interCert, pub, s.interKey)
	if err != nil {
		return nil, err
	}
	sctExt, err := s.sct(pre.RawTBSCertificate)
	if err != nil {
		return nil, err
	}
	tmpl.ExtraExtensions = append(tmpl.ExtraExtensions, sctExt)
	leaf, err := certificate(tmpl, s.interCert, pub, s.interKey)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, c := range []*x509.Certificate{leaf, s.interCert, s.caCert} {
		out = append(out, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})))
	}
	return out, nil
}

func (s *Services) sct(tbs []byte) (pkix.Extension, error) {
	issuerKeyHash := sha256.Sum256(s.interCert.RawSubjectPublicKeyInfo)
	ts := uint64(time.Now().UnixMilli())
	leaf := ct.MerkleTreeLeaf{Version: ct.V1, LeafType: ct.TimestampedEntryLeafType, TimestampedEntry: &ct.TimestampedEntry{
		Timestamp: ts, EntryType: ct.PrecertLogEntryType, PrecertEntry: &ct.PreCert{IssuerKeyHash: issuerKeyHash, TBSCertificate: tbs},
	}}
	var id ct.LogID
	copy(id.KeyID[:], logID(&s.ctKey.PublicKey))
	sct := ct.SignedCertificateTimestamp{SCTVersion: ct.V1, LogID: id, Timestamp: ts}
	input, err := ct.SerializeSCTSignatureInput(sct, ct.LogEntry{Leaf: leaf})
	if err != nil {
		return pkix.Extension{}, err
	}
	sig, err := cttls.CreateSignature(*s.ctKey, cttls.SHA256, input)
	if err != nil {
		return pkix.Extension{}, err
	}
	sct.Signature = ct.DigitallySigned(sig)
	serialized, err := cttls.Marshal(sct)
	if err != nil {
		return pkix.Extension{}, err
	}
	list, err := cttls.Marshal(ctx509.SignedCertificateTimestampList{SCTList: []ctx509.SerializedSCT{{Val: serialized}}})
	if err != nil {
		return pkix.Extension{}, err
	}
	value, err := asn1.Marshal(list)
	if err != nil {
		return pkix.Extension{}, err
	}
	return pkix.Extension{Id: oidSCTList, Value: value}, nil
}

// ---- Rekor

func (s *Services) rekor(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/api/v1/log/entries" {
		http.NotFound(w, r)
		return
	}
	pe, err := models.UnmarshalProposedEntry(r.Body, runtime.JSONConsumer())
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"code": 400, "message": err.Error()})
		return
	}
	entry, err := types.CreateVersionedEntry(pe)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"code": 400, "message": err.Error()})
		return
	}
	// Rekor's dsse type verifies the envelope's signatures with the proposed certificate while it
	// canonicalizes.
	body, err := types.CanonicalizeEntry(r.Context(), entry)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"code": 400, "message": err.Error()})
		return
	}
	anon, uuid, err := s.append(r.Context(), body)
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]any{"code": 500, "message": err.Error()})
		return
	}
	w.Header().Set("ETag", uuid)
	w.Header().Set("Location", "/api/v1/log/entries/"+uuid)
	writeJSON(w, http.StatusCreated, models.LogEntry{uuid: anon})
}

const treeID = 1

func (s *Services) append(ctx context.Context, body []byte) (models.LogEntryAnon, string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := rfc6962.DefaultHasher
	leafHash := h.HashLeaf(body)
	s.leaves = append(s.leaves, leafHash)
	index, size := uint64(len(s.leaves)-1), uint64(len(s.leaves))
	rootHash := merkleRoot(s.leaves)
	path, err := inclusion(s.leaves, index)
	if err != nil {
		return models.LogEntryAnon{}, "", err
	}
	if err := proof.VerifyInclusion(h, index, size, leafHash, path, rootHash); err != nil {
		return models.LogEntryAnon{}, "", fmt.Errorf("self-check of the inclusion proof: %w", err)
	}
	signer, err := signature.LoadECDSASignerVerifier(s.rekorKey, crypto.SHA256)
	if err != nil {
		return models.LogEntryAnon{}, "", err
	}
	u, _ := url.Parse(s.RekorURL)
	checkpoint, err := util.CreateAndSignCheckpoint(ctx, u.Hostname(), treeID, size, rootHash, signer)
	if err != nil {
		return models.LogEntryAnon{}, "", err
	}
	integrated := time.Now().Unix()
	id := hex.EncodeToString(logID(&s.rekorKey.PublicKey))
	idx := int64(index)
	b64 := base64.StdEncoding.EncodeToString(body)
	setPayload, err := json.Marshal(map[string]any{"body": b64, "integratedTime": integrated, "logID": id, "logIndex": idx})
	if err != nil {
		return models.LogEntryAnon{}, "", err
	}
	canon, err := canonicalJSON(setPayload)
	if err != nil {
		return models.LogEntryAnon{}, "", err
	}
	set, err := signer.SignMessage(bytes.NewReader(canon))
	if err != nil {
		return models.LogEntryAnon{}, "", err
	}
	hashes := make([]string, len(path))
	for i, p := range path {
		hashes[i] = hex.EncodeToString(p)
	}
	rh := hex.EncodeToString(rootHash)
	sz, cp := int64(size), string(checkpoint)
	return models.LogEntryAnon{
		Body: b64, IntegratedTime: &integrated, LogID: &id, LogIndex: &idx,
		Verification: &models.LogEntryAnonVerification{
			SignedEntryTimestamp: strfmt.Base64(set),
			InclusionProof:       &models.InclusionProof{LogIndex: &idx, TreeSize: &sz, RootHash: &rh, Hashes: hashes, Checkpoint: &cp},
		},
	}, hex.EncodeToString(leafHash), nil
}

// canonicalJSON re-encodes a flat JSON object with sorted keys (encoding/json sorts map keys),
// which is RFC 8785 for the signed entry timestamp's payload (strings, integers).
func canonicalJSON(b []byte) ([]byte, error) {
	var m map[string]any
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(&m); err != nil {
		return nil, err
	}
	return json.Marshal(m)
}

// merkleRoot and inclusion compute RFC 6962 trees over the leaf hashes.
func merkleRoot(leaves [][]byte) []byte {
	switch n := len(leaves); n {
	case 0:
		return rfc6962.DefaultHasher.EmptyRoot()
	case 1:
		return leaves[0]
	default:
		k := split(n)
		return rfc6962.DefaultHasher.HashChildren(merkleRoot(leaves[:k]), merkleRoot(leaves[k:]))
	}
}

func inclusion(leaves [][]byte, index uint64) ([][]byte, error) {
	n := uint64(len(leaves))
	if index >= n {
		return nil, errors.New("index out of range")
	}
	if n == 1 {
		return nil, nil
	}
	k := uint64(split(int(n)))
	if index < k {
		p, err := inclusion(leaves[:k], index)
		return append(p, merkleRoot(leaves[k:])), err
	}
	p, err := inclusion(leaves[k:], index-k)
	return append(p, merkleRoot(leaves[:k])), err
}

// split is the largest power of two below n.
func split(n int) int {
	k := 1
	for k<<1 < n {
		k <<= 1
	}
	return k
}

// ---- timestamp authority

func (s *Services) tsa(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/api/v1/timestamp" {
		http.NotFound(w, r)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	req, err := timestamp.ParseRequest(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	ts := timestamp.Timestamp{HashAlgorithm: req.HashAlgorithm, HashedMessage: req.HashedMessage, Time: time.Now(), Nonce: req.Nonce,
		Policy: asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 57264, 2}, AddTSACertificate: req.Certificates, ExtraExtensions: req.Extensions}
	resp, err := ts.CreateResponseWithOpts(s.tsaCert, s.tsaKey, crypto.SHA256)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/timestamp-reply")
	w.Write(resp)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}
