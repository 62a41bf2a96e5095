package oci

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/qualkit/qualkit/attest"
	"github.com/qualkit/qualkit/schemas/attestfmt"
	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/evidence"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry"
	"oras.land/oras-go/v2/registry/remote"
)

// The layout of a receipt artifact. A receipt artifact is an OCI image manifest (v1.1) with
// artifactType ArtifactType, the empty config, and one layer per file of the evidence tree: media
// type FileMediaType, the file's path relative to the evidence root in the
// org.opencontainers.image.title annotation (as oras names files). The manifest's
// AnnotationReceipt names the receipt among them. The receipt's Sigstore bundle is also a
// referrer: a manifest whose subject is the receipt artifact, artifactType and single layer of
// the bundle's media type, annotated as cosign's bundle specification says.
const (
	ArtifactType  = "application/vnd.qualkit.receipt.v1"
	FileMediaType = "application/vnd.qualkit.evidence.file.v1"
	// AnnotationReceipt is the manifest annotation naming the receipt's path in the tree.
	AnnotationReceipt = "dev.qualkit.receipt"
	// AnnotationContent and AnnotationPredicateType are cosign's bundle manifest annotations.
	AnnotationContent       = "dev.sigstore.bundle.content"
	AnnotationPredicateType = "dev.sigstore.bundle.predicateType"
	// BundleContentDSSE says the bundle carries a DSSE envelope.
	BundleContentDSSE = "dsse-envelope"
	// Scheme prefixes a registry reference on the command line.
	Scheme = "oci://"
)

// Limits bound what Pull reads from a registry, before it is read.
type Limits struct {
	// ManifestBytes bounds the artifact manifest.
	ManifestBytes int64
	// Files bounds the number of layers (files).
	Files int
	// FileBytes bounds one layer; TotalBytes all of them together.
	FileBytes, TotalBytes int64
}

// DefaultLimits fit a receipt with a 100,000-record campaign and its server binary.
var DefaultLimits = Limits{ManifestBytes: 4 << 20, Files: 4096, FileBytes: 1 << 30, TotalBytes: 4 << 30}

// Sentinel errors (errors.Is).
var (
	// ErrReference: not an oci:// reference this package accepts.
	ErrReference = errors.New("bad OCI reference")
	// ErrRefused: the artifact breaks the layout or a limit; nothing of it is kept.
	ErrRefused = errors.New("OCI artifact refused")
	// ErrDigest: bytes the registry served do not match their digest (a tampered blob).
	ErrDigest = errors.New("OCI content does not match its digest")
	// ErrNotFound: the registry has no such manifest or blob (oras' errdef.ErrNotFound).
	ErrNotFound = errdef.ErrNotFound
)

// errVCSTitle: a layer title (or a path Publish would push) is VCS metadata.
var errVCSTitle = errors.New("VCS metadata (a path component starting with .git) is never part of a pulled tree: the verifier would read it as the evidence root's checkout")

// vcsMetadata reports whether a slash-separated path has a component starting with .git (any
// case: .git, .gitmodules, .GIT on a case-insensitive file system).
func vcsMetadata(rel string) bool {
	for _, c := range strings.Split(rel, "/") {
		if strings.HasPrefix(strings.ToLower(c), ".git") {
			return true
		}
	}
	return false
}

// IsRef reports whether s is meant as a registry reference (it starts with oci://).
func IsRef(s string) bool { return strings.HasPrefix(s, Scheme) }

// Ref is a parsed oci://REGISTRY/REPOSITORY[:TAG|@DIGEST] reference.
type Ref struct {
	registry.Reference
}

// ParseRef parses oci://REGISTRY/REPOSITORY[:TAG|@DIGEST].
func ParseRef(s string) (Ref, error) {
	if !IsRef(s) {
		return Ref{}, fmt.Errorf("%w: %q does not start with %s", ErrReference, s, Scheme)
	}
	r, err := registry.ParseReference(strings.TrimPrefix(s, Scheme))
	if err != nil {
		return Ref{}, fmt.Errorf("%w: %q: %v", ErrReference, s, err)
	}
	return Ref{r}, nil
}

// String is the reference with its scheme.
func (r Ref) String() string { return Scheme + r.Reference.String() }

// repository opens the reference's repository: plain HTTP only for a loopback registry
// (127.0.0.0/8, ::1, localhost), HTTPS otherwise; every request under the network rules and the
// minimum rate of t (client).
func repository(r Ref, t Transfer) (*remote.Repository, error) {
	repo, err := remote.NewRepository(r.Registry + "/" + r.Repository)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrReference, err)
	}
	repo.PlainHTTP = isLoopback(r.Host())
	repo.Client = client(r, t)
	return repo, nil
}

// Published is what Publish pushed.
type Published struct {
	// Ref names the artifact by digest (and Tag, when one was given, points at it).
	Ref Ref
	// Digest is the receipt artifact's manifest digest.
	Digest string
	// Bundle is the digest of the bundle referrer's manifest; "" when the receipt has no bundle.
	Bundle string
	// Files are the paths pushed, sorted.
	Files []string
}

// Publish pushes the receipt root/receiptRel with its evidence tree to ref: the receipt, its DSSE
// envelope and Sigstore bundle beside it, and every artifact the receipt binds by a path relative
// to root that is present there, read without following a symlink, regular files only (model
// files, whose paths are relative to their model directory, are not pushed). A bound input that
// is absent (a server binary outside the tree) is not pushed; the verifier says so when
// it verifies the pulled tree. The manifest's created annotation is the receipt's created_at, so
// publishing the same receipt twice gives the same digest. When ref has a tag, the tag is set.
// The whole push is bounded by t (ErrDeadline, ErrTooSlow) and its requests by the network rules
// (ErrNetPolicy). A bound path that is VCS metadata (a component starting with .git) is refused:
// a pull would refuse the artifact.
func Publish(ctx context.Context, root, receiptRel string, ref Ref, t Transfer) (_ *Published, err error) {
	ctx, cancel := t.bound(ctx)
	defer cancel()
	defer func() { err = causeOf(ctx, err) }()
	dir, err := os.Open(root)
	if err != nil {
		return nil, fmt.Errorf("publish: %w", err)
	}
	defer dir.Close()
	raw, err := evidence.ReadBeneath(dir, receiptRel, DefaultLimits.FileBytes)
	if err != nil {
		return nil, fmt.Errorf("publish: read receipt: %w", err)
	}
	var rc contract.ReceiptDoc
	if err := json.Unmarshal(raw, &rc); err != nil {
		return nil, fmt.Errorf("publish: receipt %s: %w", receiptRel, err)
	}
	envelopeRel, bundleRel := attest.OutputPaths(receiptRel)
	files := []string{receiptRel}
	seen := map[string]bool{receiptRel: true}
	add := func(rel string, required bool) error {
		if seen[rel] || filepath.IsAbs(rel) || evidence.CheckBeneath(rel) != nil {
			return nil
		}
		if vcsMetadata(rel) {
			return fmt.Errorf("publish: %s: %w", rel, errVCSTitle)
		}
		f, _, err := evidence.OpenBeneath(dir, rel, DefaultLimits.FileBytes)
		if errors.Is(err, os.ErrNotExist) && !required {
			return nil
		}
		if err != nil {
			return fmt.Errorf("publish: %w", err)
		}
		f.Close()
		seen[rel] = true
		files = append(files, rel)
		return nil
	}
	for _, rel := range []string{envelopeRel, bundleRel} {
		if err := add(rel, false); err != nil {
			return nil, err
		}
	}
	for _, a := range rc.Artifacts {
		switch a.Kind {
		case contract.ArtifactKindModelWeight, contract.ArtifactKindModelConfig, contract.ArtifactKindTokenizer,
			contract.ArtifactKindChatTemplate, contract.ArtifactKindModelFile:
			continue // relative to the model directory, not to the evidence root; never copied with evidence
		}
		if err := add(a.Path, false); err != nil {
			return nil, err
		}
	}
	sort.Strings(files[1:])
	if len(files) > DefaultLimits.Files {
		return nil, fmt.Errorf("publish: %d files, more than the %d a pull accepts", len(files), DefaultLimits.Files)
	}
	repo, err := repository(ref, t)
	if err != nil {
		return nil, err
	}
	var layers []ocispec.Descriptor
	var bundleDesc *ocispec.Descriptor
	for _, rel := range files {
		desc, err := pushFile(ctx, repo, dir, rel)
		if err != nil {
			return nil, err
		}
		layers = append(layers, desc)
		if rel == bundleRel {
			d := desc
			bundleDesc = &d
		}
	}
	desc, err := oras.PackManifest(ctx, repo, oras.PackManifestVersion1_1, ArtifactType, oras.PackManifestOptions{
		Layers: layers,
		ManifestAnnotations: map[string]string{
			AnnotationReceipt:         receiptRel,
			ocispec.AnnotationCreated: rc.CreatedAt,
		},
	})
	if err != nil {
		return nil, fmt.Errorf("publish: push manifest to %s: %w", ref, err)
	}
	out := &Published{Digest: desc.Digest.String(), Files: files}
	out.Ref = ref
	out.Ref.Reference.Reference = desc.Digest.String()
	if ref.Reference.Reference != "" && ref.ValidateReferenceAsDigest() != nil {
		if err := repo.Tag(ctx, desc, ref.Reference.Reference); err != nil {
			return nil, fmt.Errorf("publish: tag %s: %w", ref, err)
		}
	}
	if bundleDesc != nil {
		b := *bundleDesc
		b.MediaType = attestfmt.BundleMediaType
		b.Annotations = nil
		bd, err := oras.PackManifest(ctx, repo, oras.PackManifestVersion1_1, attestfmt.BundleMediaType, oras.PackManifestOptions{
			Subject: &desc,
			Layers:  []ocispec.Descriptor{b},
			ManifestAnnotations: map[string]string{
				AnnotationContent:         BundleContentDSSE,
				AnnotationPredicateType:   attestfmt.PredicateType,
				ocispec.AnnotationCreated: rc.CreatedAt,
			},
		})
		if err != nil {
			return nil, fmt.Errorf("publish: push the bundle referrer to %s: %w", ref, err)
		}
		out.Bundle = bd.Digest.String()
	}
	return out, nil
}

// pushFile pushes one file of the tree as a layer (skipped when the registry has the blob),
// streaming it twice (once to hash, once to push) so memory does not grow with the file.
func pushFile(ctx context.Context, repo *remote.Repository, dir *os.File, rel string) (ocispec.Descriptor, error) {
	f, size, err := evidence.OpenBeneath(dir, rel, DefaultLimits.FileBytes)
	if err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("publish: %w", err)
	}
	defer f.Close()
	dg, err := digest.SHA256.FromReader(io.LimitReader(f, size+1))
	if err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("publish: read %s: %w", rel, err)
	}
	desc := ocispec.Descriptor{MediaType: FileMediaType, Digest: dg, Size: size}
	ok, err := repo.Exists(ctx, desc)
	if err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("publish: %s: %w", rel, err)
	}
	if !ok {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return ocispec.Descriptor{}, fmt.Errorf("publish: %s: %w", rel, err)
		}
		// The registry checks the bytes against desc: a file that changed since it was hashed fails here.
		if err := repo.Push(ctx, desc, content.NewVerifyReader(io.LimitReader(f, size+1), desc)); err != nil {
			return ocispec.Descriptor{}, fmt.Errorf("publish: push %s: %w", rel, err)
		}
	}
	desc.Annotations = map[string]string{ocispec.AnnotationTitle: rel}
	return desc, nil
}

// Pulled is a receipt artifact fetched into a directory.
type Pulled struct {
	// Root is the evidence root (the directory Pull was given).
	Root string
	// Receipt is the receipt's path below Root, slash-separated.
	Receipt string
	// Digest is the artifact's manifest digest (for a tag, what the tag pointed at).
	Digest string
	// Files are the paths written, in manifest order.
	Files []string
}

// Pull fetches the receipt artifact ref into dest, which must be an empty directory: the
// manifest (at most lim.ManifestBytes, checked against its digest), then every layer, each
// checked before it is fetched (media type, size within lim, a clean relative title that no other
// layer has, the count and the total within lim) and against its digest while written (a
// mismatch is ErrDigest). Files are created exclusively, never through a symlink, with mode 0644.
// A title that names VCS metadata (a path component starting with .git) is refused: the verifier
// reads the evidence root's .git as its checkout. The whole pull is bounded by t (ErrDeadline,
// ErrTooSlow) and its requests by the network rules (ErrNetPolicy). On any error, cancellation
// included, the files written are removed again.
func Pull(ctx context.Context, ref Ref, dest string, lim Limits, t Transfer) (_ *Pulled, err error) {
	ctx, cancel := t.bound(ctx)
	defer cancel()
	defer func() { err = causeOf(ctx, err) }()
	repo, err := repository(ref, t)
	if err != nil {
		return nil, err
	}
	if ref.Reference.Reference == "" {
		return nil, fmt.Errorf("%w: %s names no tag or digest", ErrReference, ref)
	}
	ents, err := os.ReadDir(dest)
	if err != nil {
		return nil, fmt.Errorf("pull: %w", err)
	}
	if len(ents) != 0 {
		return nil, fmt.Errorf("pull: %s is not empty", dest)
	}
	desc, raw, err := oras.FetchBytes(ctx, repo, ref.Reference.Reference, oras.FetchBytesOptions{MaxBytes: lim.ManifestBytes})
	if err != nil {
		if errors.Is(err, content.ErrMismatchedDigest) {
			return nil, fmt.Errorf("pull %s: manifest: %w: %v", ref, ErrDigest, err)
		}
		return nil, fmt.Errorf("pull %s: manifest: %w", ref, err)
	}
	if desc.MediaType != ocispec.MediaTypeImageManifest {
		return nil, fmt.Errorf("pull %s: %w: media type %s, want %q", ref, ErrRefused, clip(desc.MediaType), ocispec.MediaTypeImageManifest)
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("pull %s: %w: the manifest (%d bytes) is not JSON of an OCI image manifest", ref, ErrRefused, len(raw))
	}
	receipt, err := checkManifest(&m, lim)
	if err != nil {
		return nil, fmt.Errorf("pull %s: %w", ref, err)
	}
	out := &Pulled{Root: dest, Receipt: receipt, Digest: desc.Digest.String()}
	defer func() {
		if err != nil {
			for _, rel := range out.Files {
				os.Remove(filepath.Join(dest, filepath.FromSlash(rel)))
			}
			removeEmptyDirs(dest)
		}
	}()
	for _, l := range m.Layers {
		rel := l.Annotations[ocispec.AnnotationTitle]
		if err := fetchLayer(ctx, repo, l, dest, rel); err != nil {
			return out, fmt.Errorf("pull %s: %s: %w", ref, rel, err)
		}
		out.Files = append(out.Files, rel)
	}
	return out, nil
}

// checkManifest applies the layout and the limits before a layer is fetched; it returns the
// receipt's path.
func checkManifest(m *ocispec.Manifest, lim Limits) (string, error) {
	if m.ArtifactType != ArtifactType {
		return "", fmt.Errorf("%w: artifactType %s, want %q", ErrRefused, clip(m.ArtifactType), ArtifactType)
	}
	if len(m.Layers) == 0 || len(m.Layers) > lim.Files {
		return "", fmt.Errorf("%w: %d layers, want 1 to %d", ErrRefused, len(m.Layers), lim.Files)
	}
	var total int64
	titles := map[string]bool{}
	dirs := map[string]bool{}
	for i, l := range m.Layers {
		rel := l.Annotations[ocispec.AnnotationTitle]
		switch {
		case l.MediaType != FileMediaType:
			return "", fmt.Errorf("%w: layer %d: media type %s, want %q", ErrRefused, i, clip(l.MediaType), FileMediaType)
		case l.Size < 0 || l.Size > lim.FileBytes:
			return "", fmt.Errorf("%w: layer %d (%s): %d bytes, limit %d", ErrRefused, i, clip(rel), l.Size, lim.FileBytes)
		case l.Digest.Validate() != nil || l.Digest.Algorithm() != digest.SHA256:
			return "", fmt.Errorf("%w: layer %d: digest %s is not sha256", ErrRefused, i, clip(string(l.Digest)))
		}
		if err := evidence.CheckBeneath(rel); err != nil {
			return "", fmt.Errorf("%w: layer %d: title %s is not a clean relative path (empty, absolute, a backslash or NUL, or an empty, \".\" or \"..\" component)", ErrRefused, i, clip(rel))
		}
		if vcsMetadata(rel) {
			return "", fmt.Errorf("%w: layer %d: title %s: %w", ErrRefused, i, clip(rel), errVCSTitle)
		}
		if titles[rel] || dirs[rel] {
			return "", fmt.Errorf("%w: layer %d: %s is named twice (or is also a directory)", ErrRefused, i, clip(rel))
		}
		titles[rel] = true
		for d := filepath.ToSlash(filepath.Dir(rel)); d != "."; d = filepath.ToSlash(filepath.Dir(d)) {
			if titles[d] {
				return "", fmt.Errorf("%w: layer %d: %s is below the file %s", ErrRefused, i, clip(rel), clip(d))
			}
			dirs[d] = true
		}
		total += l.Size
		if total > lim.TotalBytes {
			return "", fmt.Errorf("%w: the layers exceed %d bytes together", ErrRefused, lim.TotalBytes)
		}
	}
	receipt := m.Annotations[AnnotationReceipt]
	if !titles[receipt] {
		return "", fmt.Errorf("%w: annotation %s %s names no layer", ErrRefused, AnnotationReceipt, clip(receipt))
	}
	return receipt, nil
}

// fetchLayer writes one layer to dest/rel: parents made as real directories, the file created
// exclusively, the bytes bounded by the descriptor's size and checked against its digest.
func fetchLayer(ctx context.Context, repo *remote.Repository, l ocispec.Descriptor, dest, rel string) error {
	if err := evidence.CheckNoSymlink(dest, rel); err != nil {
		return fmt.Errorf("%w: %v", ErrRefused, err)
	}
	path := filepath.Join(dest, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if err := evidence.CheckNoSymlink(dest, rel); err != nil {
		return fmt.Errorf("%w: %v", ErrRefused, err)
	}
	rc, err := repo.Fetch(ctx, l)
	if err != nil {
		return err
	}
	defer rc.Close()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o644)
	if err != nil {
		return err
	}
	vr := content.NewVerifyReader(rc, l)
	_, err = io.Copy(f, vr)
	if err == nil {
		err = vr.Verify()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		if errors.Is(err, content.ErrMismatchedDigest) || errors.Is(err, content.ErrTrailingData) || errors.Is(err, io.ErrUnexpectedEOF) {
			return fmt.Errorf("%w: %v", ErrDigest, err)
		}
		return err
	}
	return nil
}

// removeEmptyDirs removes the directories Pull made below dest that are empty again.
func removeEmptyDirs(dest string) {
	var dirs []string
	filepath.WalkDir(dest, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() && p != dest {
			dirs = append(dirs, p)
		}
		return nil
	})
	for i := len(dirs) - 1; i >= 0; i-- {
		os.Remove(dirs[i])
	}
}

// Bundle is a Sigstore bundle found as a referrer of a receipt artifact.
type Bundle struct {
	// Digest is the referrer manifest's digest.
	Digest string
	// Bundle is the bundle's bytes, checked against the layer digest.
	Bundle []byte
}

// Bundles lists the referrers of the manifest subject (a digest) in ref's repository through the
// referrers API (or the tag schema where a registry lacks it, as oras falls back) and returns
// the Sigstore bundle of each whose manifest has the bundle artifactType. Each referrer's manifest
// is fetched and its artifactType read there, not from the referrers index: some registries
// (go-containerregistry's) report the config media type in the index instead.
func Bundles(ctx context.Context, ref Ref, subject string, lim Limits, t Transfer) (_ []Bundle, err error) {
	ctx, cancel := t.bound(ctx)
	defer cancel()
	defer func() { err = causeOf(ctx, err) }()
	repo, err := repository(ref, t)
	if err != nil {
		return nil, err
	}
	d, err := digest.Parse(subject)
	if err != nil {
		return nil, fmt.Errorf("%w: subject %s: %v", ErrReference, clip(subject), err)
	}
	desc, err := repo.Resolve(ctx, d.String())
	if err != nil {
		return nil, fmt.Errorf("referrers of %s: %w", subject, err)
	}
	var refs []ocispec.Descriptor
	err = repo.Referrers(ctx, desc, "", func(rs []ocispec.Descriptor) error {
		refs = append(refs, rs...)
		if len(refs) > lim.Files {
			return fmt.Errorf("%w: more than %d referrers", ErrRefused, lim.Files)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("referrers of %s: %w", subject, err)
	}
	var out []Bundle
	for _, r := range refs {
		if r.MediaType != ocispec.MediaTypeImageManifest {
			continue
		}
		_, raw, err := oras.FetchBytes(ctx, repo, r.Digest.String(), oras.FetchBytesOptions{MaxBytes: lim.ManifestBytes})
		if err != nil {
			return nil, fmt.Errorf("fetch referrer %s: %w", r.Digest, err)
		}
		var m ocispec.Manifest
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, fmt.Errorf("%w: referrer %s: the manifest (%d bytes) is not JSON of an OCI image manifest", ErrRefused, r.Digest, len(raw))
		}
		if m.ArtifactType != attestfmt.BundleMediaType {
			continue
		}
		if len(m.Layers) != 1 || m.Layers[0].MediaType != attestfmt.BundleMediaType || m.Layers[0].Size < 0 || m.Layers[0].Size > lim.FileBytes {
			return nil, fmt.Errorf("%w: referrer %s is not one bundle layer of %s", ErrRefused, r.Digest, attestfmt.BundleMediaType)
		}
		rc, err := repo.Fetch(ctx, m.Layers[0])
		if err != nil {
			return nil, err
		}
		b, err := content.ReadAll(rc, m.Layers[0])
		rc.Close()
		if err != nil {
			return nil, fmt.Errorf("%w: bundle of %s: %v", ErrDigest, r.Digest, err)
		}
		out = append(out, Bundle{Digest: r.Digest.String(), Bundle: b})
	}
	return out, nil
}
