package gen

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func generateGo(t *testing.T, cueDir string) []GoFile {
	t.Helper()
	schemas, err := Generate(cueDir)
	if err != nil {
		t.Fatal(err)
	}
	files, err := GenerateGo(cueDir, schemas)
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func goFile(t *testing.T, files []GoFile, name string) string {
	t.Helper()
	for _, f := range files {
		if f.Name == name {
			return strings.Join(strings.Fields(string(f.Source)), " ") // gofmt's alignment aside
		}
	}
	t.Fatalf("no generated %s", name)
	return ""
}

// TestGoUpToDate fails when the committed generated Go differs from what the CUE source generates.
func TestGoUpToDate(t *testing.T) {
	stale, err := StaleGo(generateGo(t, filepath.Join(root, "cue")), filepath.Join(root, "schemas", "contract"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range stale {
		t.Errorf("%s is stale; run: make generate", s)
	}
}

func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func editFile(t *testing.T, path, old, new string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(old)) {
		t.Fatalf("%s does not contain %q", path, old)
	}
	if err := os.WriteFile(path, bytes.Replace(b, []byte(old), []byte(new), 1), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestEditedEnumChangesGo edits a copy of cue/: one enum gains a value, the kind table gains a
// subject kind and #Metric a documented field; the generated Go gains the constants, the table
// row, the struct field and the field's provenance row (without a kind), and check mode reports the files generated before the edit stale.
func TestEditedEnumChangesGo(t *testing.T) {
	cueDir := t.TempDir()
	copyTree(t, filepath.Join(root, "cue"), cueDir)
	before := generateGo(t, cueDir)
	const newBackend = `BackendWebgpu Backend = "webgpu"`
	if strings.Contains(goFile(t, before, "zz_generated_enums.go"), newBackend) {
		t.Fatalf("the unedited contracts already generate %s", newBackend)
	}
	common := filepath.Join(cueDir, "common", "common.cue")
	editFile(t, common, `"vulkan" | "metal"`, `"vulkan" | "metal" | "webgpu"`)
	editFile(t, common, "\tdevice_telemetry: _ @kind(subject, evidence)\n", "\tdevice_telemetry: _ @kind(subject, evidence)\n\tprofile_trace: _ @kind(subject, evidence)\n")
	editFile(t, common, "\t// diagnostic marks telemetry", "\t// warmup marks a metric of warmup requests.\n\twarmup?: bool\n\t// diagnostic marks telemetry")
	after := generateGo(t, cueDir)
	enums, kinds := goFile(t, after, "zz_generated_enums.go"), goFile(t, after, "zz_generated_kinds.go")
	for _, want := range []string{newBackend, `ArtifactKindProfileTrace ArtifactKind = "profile_trace"`} {
		if !strings.Contains(enums, want) {
			t.Errorf("after the edit the enums lack %s", want)
		}
	}
	if !strings.Contains(kinds, "ArtifactKindProfileTrace: {Subject: true, Evidence: true},") ||
		!strings.Contains(kinds, "ArtifactKindDeviceTelemetry, ArtifactKindProfileTrace") {
		t.Errorf("after the edit the kind table lacks the new subject kind:\n%s", kinds)
	}
	if types := goFile(t, after, "zz_generated_types.go"); !strings.Contains(types, "// Warmup marks a metric of warmup requests. Warmup bool `json:\"warmup,omitempty\"`") {
		t.Errorf("after the edit the Metric type lacks the documented field Warmup")
	}
	// the new field has no @prov: its provenance row has no kind (TestEvidenceProvenanceComplete
	// in package schemas names it)
	if prov := goFile(t, after, "zz_generated_provenance.go"); !strings.Contains(prov, `{Path: "/metrics/*/warmup", Kind: ProvenanceTreatment(""), Rule: "", Gap: ""`) {
		t.Errorf("after the edit the provenance table lacks the new field without a kind")
	}
	out := t.TempDir()
	if err := WriteGo(before, out); err != nil {
		t.Fatal(err)
	}
	stale, err := StaleGo(after, out)
	if err != nil {
		t.Fatal(err)
	}
	if len(stale) != 4 {
		t.Errorf("stale after the edit = %v, want the four generated files", stale)
	}
}

// TestGoDriftIsReported: check mode finds a hand-edited, a missing and a leftover generated file.
func TestGoDriftIsReported(t *testing.T) {
	files := generateGo(t, filepath.Join(root, "cue"))
	dir := t.TempDir()
	if err := WriteGo(files, dir); err != nil {
		t.Fatal(err)
	}
	if stale, err := StaleGo(files, dir); err != nil || len(stale) != 0 {
		t.Fatalf("freshly written files stale: %v %v", stale, err)
	}
	enums := filepath.Join(dir, "zz_generated_enums.go")
	editFile(t, enums, "package contract\n", "package contract\n\nconst StatusPass Status = \"pass\"\n")
	if err := os.Remove(filepath.Join(dir, "zz_generated_kinds.go")); err != nil {
		t.Fatal(err)
	}
	leftover := filepath.Join(dir, "zz_generated_old.go")
	if err := os.WriteFile(leftover, []byte("package contract\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	stale, err := StaleGo(files, dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{enums, filepath.Join(dir, "zz_generated_kinds.go"), leftover}
	if strings.Join(stale, "\n") != strings.Join(want, "\n") {
		t.Errorf("stale = %v, want %v", stale, want)
	}
	if err := WriteGo(files, dir); err != nil {
		t.Fatal(err)
	}
	if stale, _ := StaleGo(files, dir); len(stale) != 0 {
		t.Errorf("after WriteGo still stale: %v", stale)
	}
}

// TestGoNames pins the naming rule of identifiers.
func TestGoNames(t *testing.T) {
	for in, want := range map[string]string{
		"lower_is_better": "LowerIsBetter", "p99.9": "P99_9", "p50": "P50", "cuda": "CUDA", "request_id": "RequestID",
		"<=": "LessOrEqual", "": "Empty", "qualkit.next-token-result.v2": "QualkitNextTokenResultV2", "top10_overlap": "Top10Overlap",
	} {
		if got := goName(in); got != want {
			t.Errorf("goName(%q) = %q, want %q", in, got, want)
		}
	}
}
