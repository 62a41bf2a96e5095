package oci

import (
	"encoding/json"
	"github.com/qualkit/qualkit/schemas/evidence"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// FuzzCheckManifest: whatever manifest a registry serves, checkManifest does not panic, and what
// it accepts names only clean, distinct relative paths within the limits, the receipt among them.
func FuzzCheckManifest(f *testing.F) {
	f.Add([]byte(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","artifactType":"application/vnd.qualkit.receipt.v1",
"config":{"mediaType":"application/vnd.oci.empty.v1+json","digest":"sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a","size":2},
"layers":[{"mediaType":"application/vnd.qualkit.evidence.file.v1","digest":"sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a","size":2,"annotations":{"org.opencontainers.image.title":"r.json"}}],
"annotations":{"dev.qualkit.receipt":"r.json"}}`))
	f.Add([]byte(`{"artifactType":"application/vnd.qualkit.receipt.v1","layers":[{"mediaType":"application/vnd.qualkit.evidence.file.v1","size":1,"annotations":{"org.opencontainers.image.title":"../x"}}]}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var m ocispec.Manifest
		if json.Unmarshal(data, &m) != nil {
			return
		}
		lim := Limits{ManifestBytes: 1 << 20, Files: 16, FileBytes: 1 << 20, TotalBytes: 4 << 20}
		receipt, err := checkManifest(&m, lim)
		if err != nil {
			return
		}
		seen := map[string]bool{}
		var total int64
		for _, l := range m.Layers {
			rel := l.Annotations[ocispec.AnnotationTitle]
			if evidence.CheckBeneath(rel) != nil || seen[rel] || l.Size < 0 || l.Size > lim.FileBytes {
				t.Fatalf("accepted layer %q (size %d)", rel, l.Size)
			}
			seen[rel] = true
			total += l.Size
		}
		if !seen[receipt] || len(m.Layers) > lim.Files || total > lim.TotalBytes {
			t.Fatalf("accepted receipt %q of %d layers, %d bytes", receipt, len(m.Layers), total)
		}
	})
}
