package driver

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/jsonstrict"
	"github.com/qualkit/qualkit/schemas/rules"
)

func readDocs(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "docs", "drivers.md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestDocsSpec: the driver spec printed in docs/drivers.md is valid, pins the committed reference
// files, and passes when run.
func TestDocsSpec(t *testing.T) {
	doc := readDocs(t)
	m := regexp.MustCompile("(?s)```json\n(.*?)```").FindStringSubmatch(doc)
	if m == nil {
		t.Fatal("docs/drivers.md has no JSON example")
	}
	raw := []byte(m[1])
	if err := validDocument(raw, "docs/drivers.md example", contract.DriverSpec); err != nil {
		t.Fatal(err)
	}
	var spec contract.DriverSpecDoc
	if err := jsonstrict.DecodeInto(raw, &spec); err != nil {
		t.Fatal(err)
	}
	root := repoRoot(t)
	for path, want := range map[string]string{spec.Worker.Script: spec.Worker.ScriptDigest, spec.Request.Path: spec.Request.Digest, spec.Model.Path: spec.Model.Digest} {
		if got := fileDigest(t, filepath.Join(root, path)); got != want {
			t.Errorf("docs/drivers.md pins %s as %s, the file is %s: update the example", path, want, got)
		}
	}
	if t.Failed() {
		return
	}
	requireIsolation(t)
	in := func(p, d string) Input { return Input{Path: p, Abs: filepath.Join(root, p), Digest: d} }
	job := Job{ID: spec.ID, Contract: string(spec.Contract), Executable: python3(t), Args: spec.Worker.Args,
		Script: in(spec.Worker.Script, spec.Worker.ScriptDigest), Request: in(spec.Request.Path, spec.Request.Digest),
		Model: in(spec.Model.Path, spec.Model.Digest), Timeout: time.Duration(spec.TimeoutSeconds) * time.Second}
	o := testOptions(t)
	out, err := Run(bg, job, o)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Evaluate(job, out, Provenance{CaseID: spec.ID, Source: provenance().Source, Qualrun: provenance().Qualrun, Tolerances: spec.Tolerances})
	if err != nil || res.Status != "passed" {
		t.Fatalf("%v %+v\n%s", err, res, logOf(t, o))
	}
}

// TestDocsEnvironmentTable: the closed environment documented is the one the runner builds.
func TestDocsEnvironmentTable(t *testing.T) {
	doc := readDocs(t)
	start := strings.Index(doc, "| variable | value |")
	end := strings.Index(doc[start:], "\n\n")
	var names []string
	for _, line := range strings.Split(doc[start:start+end], "\n")[2:] {
		cell := strings.Split(line, "|")[1]
		for _, n := range regexp.MustCompile("`([A-Z_]+)`").FindAllStringSubmatch(cell, -1) {
			names = append(names, n[1])
		}
	}
	slices.Sort(names)
	if !slices.Equal(names, rules.DriverBaseEnvironment) {
		t.Fatalf("docs/drivers.md lists %v\nthe runner sets %v", names, rules.DriverBaseEnvironment)
	}
}
