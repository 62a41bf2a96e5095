package oci

import (
	"bytes"
	"context"
	"crypto"
	"encoding/json"
	"errors"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/qualkit/qualkit/schemas/attestfmt"
	"github.com/qualkit/qualkit/verify"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/registry/remote"
)

// frozen is the verify module's frozen evidence: three receipts of a real campaign, signed.
const (
	frozen   = "../../../verify/testdata/frozen/v1"
	receiptA = ".qualification/receipts/a-1.json"
)

// uncheckedDisk is go-containerregistry's disk blob store without its Stat, which re-hashes a
// blob before serving it: the registry then serves whatever bytes its storage holds, as a
// compromised registry or mirror would, so the client's own digest check is what is tested.
type uncheckedDisk struct{ h registry.BlobHandler }

func (u uncheckedDisk) Get(ctx context.Context, repo string, h v1.Hash) (io.ReadCloser, error) {
	rc, err := u.h.Get(ctx, repo, h)
	if errors.Is(err, os.ErrNotExist) {
		return nil, registry.ErrNotFound
	}
	return rc, err
}

func (u uncheckedDisk) Put(ctx context.Context, repo string, h v1.Hash, rc io.ReadCloser) error {
	return u.h.(registry.BlobPutHandler).Put(ctx, repo, h, rc)
}

// startRegistry serves go-containerregistry's registry (referrers API on) over real HTTP on
// 127.0.0.1:0, its blobs in a directory the test can reach into; it returns host:port and the
// blob directory.
func startRegistry(t *testing.T) (string, string) {
	t.Helper()
	blobs := t.TempDir()
	srv := httptest.NewServer(registry.New(
		registry.WithReferrersSupport(true),
		registry.WithBlobHandler(uncheckedDisk{registry.NewDiskBlobHandler(blobs)}),
		registry.Logger(log.New(io.Discard, "", 0)),
	))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://"), blobs
}

func mustRef(t *testing.T, s string) Ref {
	t.Helper()
	r, err := ParseRef(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func frozenPolicy(t *testing.T) verify.Policy {
	t.Helper()
	pub, err := verify.LoadPublicKey(filepath.Join(frozen, "frozen.pub"))
	if err != nil {
		t.Fatal(err)
	}
	p := verify.DefaultPolicy()
	p.Keys = []crypto.PublicKey{pub}
	return p
}

func verifyPulled(t *testing.T, p *Pulled) *verify.Result {
	t.Helper()
	ev, err := verify.LocateIn(p.Root, filepath.Join(p.Root, filepath.FromSlash(p.Receipt)))
	if err != nil {
		t.Fatal(err)
	}
	res, err := verify.Verify(context.Background(), ev, frozenPolicy(t))
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestPublishPullVerify: publish the frozen receipt to a real registry, pull it by digest and by
// tag into fresh directories, and verify each offline: the verdict is the one the original tree
// gets; the bundle is a referrer of the artifact with cosign's media type and annotations.
func TestPublishPullVerify(t *testing.T) {
	ctx := context.Background()
	host, _ := startRegistry(t)
	pub, err := Publish(ctx, frozen, receiptA, mustRef(t, "oci://"+host+"/fleet/receipts:a-1"), DefaultTransfer)
	if err != nil {
		t.Fatal(err)
	}
	if len(pub.Files) < 5 || pub.Files[0] != receiptA {
		t.Fatalf("pushed %v", pub.Files)
	}
	for _, f := range pub.Files {
		if f == "bin/qualsim" {
			t.Fatalf("pushed %s, which is not in the tree", f)
		}
	}
	// Publishing again gives the same artifact (created is the receipt's own time).
	again, err := Publish(ctx, frozen, receiptA, mustRef(t, "oci://"+host+"/fleet/receipts:a-1"), DefaultTransfer)
	if err != nil || again.Digest != pub.Digest {
		t.Fatalf("republish: %v, digest %s then %s", err, pub.Digest, again.Digest)
	}
	for _, ref := range []string{"oci://" + host + "/fleet/receipts@" + pub.Digest, "oci://" + host + "/fleet/receipts:a-1"} {
		t.Run(ref[strings.LastIndexAny(ref, ":@"):], func(t *testing.T) {
			dest := t.TempDir()
			p, err := Pull(ctx, mustRef(t, ref), dest, DefaultLimits, DefaultTransfer)
			if err != nil {
				t.Fatal(err)
			}
			if p.Digest != pub.Digest || p.Receipt != receiptA || len(p.Files) != len(pub.Files) {
				t.Fatalf("pulled %+v, published %+v", p, pub)
			}
			res := verifyPulled(t, p)
			if res.Verdict != verify.Verified {
				t.Fatalf("pulled receipt rejected: %v", res.Findings)
			}
			if res.Scope == "" || res.Signer == "" {
				t.Fatalf("scope %q signer %q", res.Scope, res.Signer)
			}
		})
	}
	bundles, err := Bundles(ctx, mustRef(t, "oci://"+host+"/fleet/receipts"), pub.Digest, DefaultLimits, DefaultTransfer)
	if err != nil {
		t.Fatal(err)
	}
	if len(bundles) != 1 || bundles[0].Digest != pub.Bundle {
		t.Fatalf("bundle referrers %+v, want the bundle %s", bundles, pub.Bundle)
	}
	m := fetchManifest(t, host, "fleet/receipts", pub.Bundle)
	if m.ArtifactType != attestfmt.BundleMediaType || m.Subject == nil || m.Subject.Digest.String() != pub.Digest ||
		m.Annotations[AnnotationContent] != BundleContentDSSE || m.Annotations[AnnotationPredicateType] != attestfmt.PredicateType {
		t.Fatalf("bundle referrer manifest %+v", m)
	}
	b := bundles[0].Bundle
	want, _ := os.ReadFile(filepath.Join(frozen, ".qualification/receipts/a-1.sigstore.json"))
	if !bytes.Equal(b, want) {
		t.Fatal("the referrer's bundle is not the receipt's bundle")
	}
}

// TestPullRejectsTamperedLayer: a blob changed in the registry's storage (same length, one byte
// flipped) stops the pull with ErrDigest and leaves nothing behind.
func TestPullRejectsTamperedLayer(t *testing.T) {
	ctx := context.Background()
	host, blobs := startRegistry(t)
	pub, err := Publish(ctx, frozen, receiptA, mustRef(t, "oci://"+host+"/r:t"), DefaultTransfer)
	if err != nil {
		t.Fatal(err)
	}
	// The case result of the serving case: the evidence the metrics come from.
	var target string
	m := fetchManifest(t, host, "r", pub.Digest)
	for _, l := range m.Layers {
		if strings.HasSuffix(l.Annotations[ocispec.AnnotationTitle], "000-chat-stream-r000/case-result.json") {
			target = filepath.Join(blobs, "sha256", l.Digest.Encoded())
		}
	}
	if target == "" {
		t.Fatal("no case-result layer")
	}
	b, err := os.ReadFile(target)
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(b, []byte(`"value":`)) + len(`"value":`)
	b[i] = '9'
	if err := os.WriteFile(target, b, 0o644); err != nil {
		t.Fatal(err)
	}
	dest := t.TempDir()
	_, err = Pull(ctx, mustRef(t, "oci://"+host+"/r@"+pub.Digest), dest, DefaultLimits, DefaultTransfer)
	if !errors.Is(err, ErrDigest) {
		t.Fatalf("pull of a tampered layer: %v, want ErrDigest", err)
	}
	if ents, _ := os.ReadDir(dest); len(ents) != 0 {
		t.Fatalf("the refused pull left %d entries", len(ents))
	}
}

func fetchManifest(t *testing.T, host, repoName, dg string) ocispec.Manifest {
	t.Helper()
	repo, err := remote.NewRepository(host + "/" + repoName)
	if err != nil {
		t.Fatal(err)
	}
	repo.PlainHTTP = true
	desc, rc, err := repo.FetchReference(context.Background(), dg)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	raw, err := content.ReadAll(rc, desc)
	if err != nil {
		t.Fatal(err)
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// pushManifest pushes a hand-made manifest (its layers pushed too) and returns its digest.
func pushManifest(t *testing.T, host string, m ocispec.Manifest, blobs map[string][]byte) string {
	t.Helper()
	ctx := context.Background()
	repo, err := remote.NewRepository(host + "/evil")
	if err != nil {
		t.Fatal(err)
	}
	repo.PlainHTTP = true
	for _, data := range blobs {
		d := content.NewDescriptorFromBytes("application/octet-stream", data)
		if ok, _ := repo.Exists(ctx, d); !ok {
			if err := repo.Push(ctx, d, bytes.NewReader(data)); err != nil {
				t.Fatal(err)
			}
		}
	}
	empty := content.NewDescriptorFromBytes(ocispec.MediaTypeEmptyJSON, []byte("{}"))
	if ok, _ := repo.Exists(ctx, empty); !ok {
		repo.Push(ctx, empty, bytes.NewReader([]byte("{}")))
	}
	m.Versioned.SchemaVersion = 2
	m.MediaType = ocispec.MediaTypeImageManifest
	m.Config = empty
	raw, _ := json.Marshal(m)
	d := content.NewDescriptorFromBytes(ocispec.MediaTypeImageManifest, raw)
	if err := repo.Push(ctx, d, bytes.NewReader(raw)); err != nil {
		t.Fatal(err)
	}
	return d.Digest.String()
}

// TestPullRefusesUnsafeArtifacts: hand-made manifests that break the layout or a bound are
// refused before any layer is written.
func TestPullRefusesUnsafeArtifacts(t *testing.T) {
	host, _ := startRegistry(t)
	data := []byte(`{"schema":"x"}`)
	layer := func(title string) ocispec.Descriptor {
		d := content.NewDescriptorFromBytes(FileMediaType, data)
		d.Annotations = map[string]string{ocispec.AnnotationTitle: title}
		return d
	}
	man := func(ls ...ocispec.Descriptor) ocispec.Manifest {
		return ocispec.Manifest{ArtifactType: ArtifactType, Layers: ls, Annotations: map[string]string{AnnotationReceipt: "r.json"}}
	}
	wrongType := man(layer("r.json"))
	wrongType.ArtifactType = "application/vnd.other"
	big := layer("r.json")
	big.Size = 1 << 40
	other := layer("r.json")
	other.MediaType = "application/vnd.oci.image.layer.v1.tar"
	noReceipt := man(layer("s.json"))
	cases := map[string]ocispec.Manifest{
		"dotdot":         man(layer("r.json"), layer("../escape")),
		"absolute":       man(layer("r.json"), layer("/etc/passwd")),
		"dot":            man(layer("r.json"), layer("a/./b")),
		"duplicate":      man(layer("r.json"), layer("r.json")),
		"file-and-dir":   man(layer("r.json"), layer("r.json/x")),
		"artifact-type":  wrongType,
		"oversized":      man(big),
		"layer-type":     man(other),
		"no-receipt":     noReceipt,
		"too-many-files": man(layer("r.json"), layer("a"), layer("b")),
		// VCS metadata: the verifier reads the evidence root's .git as its checkout.
		"git-head":   man(layer("r.json"), layer(".git/HEAD")),
		"gitmodules": man(layer("r.json"), layer(".gitmodules")),
		"nested-git": man(layer("r.json"), layer("sub/.GIT/config")),
	}
	lim := DefaultLimits
	lim.Files = 2
	for name, m := range cases {
		t.Run(name, func(t *testing.T) {
			dg := pushManifest(t, host, m, map[string][]byte{"d": data})
			dest := t.TempDir()
			_, err := Pull(context.Background(), mustRef(t, "oci://"+host+"/evil@"+dg), dest, lim, DefaultTransfer)
			if !errors.Is(err, ErrRefused) {
				t.Fatalf("pull: %v, want ErrRefused", err)
			}
			if ents, _ := os.ReadDir(dest); len(ents) != 0 {
				t.Fatalf("refused pull left %d entries", len(ents))
			}
		})
	}
	// A manifest over the manifest bound is not read at all.
	lim.ManifestBytes = 64
	dg := pushManifest(t, host, man(layer("r.json")), map[string][]byte{"d": data})
	if _, err := Pull(context.Background(), mustRef(t, "oci://"+host+"/evil@"+dg), t.TempDir(), lim, DefaultTransfer); err == nil {
		t.Fatal("an oversized manifest was read")
	}
}

func TestParseRef(t *testing.T) {
	for _, s := range []string{"oci://127.0.0.1:5000/a/b:t", "oci://localhost/r@sha256:" + strings.Repeat("a", 64), "oci://ghcr.io/o/r"} {
		if _, err := ParseRef(s); err != nil {
			t.Errorf("%s: %v", s, err)
		}
	}
	for _, s := range []string{"127.0.0.1/r:t", "oci://", "oci://host/UPPER", "oci://host/r@sha256:short"} {
		if _, err := ParseRef(s); !errors.Is(err, ErrReference) {
			t.Errorf("%s: %v, want ErrReference", s, err)
		}
	}
	if !isLoopback("127.0.0.1") || !isLoopback("[::1]") || !isLoopback("localhost") || isLoopback("10.0.0.1") || isLoopback("ghcr.io") {
		t.Error("isLoopback")
	}
}
