package campaign

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/qualkit/qualkit/schemas"
	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/evidence"
	"github.com/qualkit/qualkit/schemas/jsonstrict"
)

var updateCorpus = flag.Bool("update-corpus", false, "rewrite the effective-run-config.v1 corpus documents these tests write")

// configWorkload is a one-case command workload (the POSIX true utility, given a typed label)
// whose variant has an effective configuration.
const configWorkload = `{
  "schema": "qualkit.workload.v1",
  "id": "effective-config",
  "kind": "correctness",
  "description": "A command case, to see the effective run configuration.",
  "determinism": {"seed": 42, "seed_delivery": "not_applicable", "repetitions": 1, "case_order": "declared", "max_parallel_cases": 1, "network_access": "forbidden"},
  "variables": [
    {"name": "batch", "description": "A number with a default.", "type": "integer", "required": false, "default": 8,
     "constraints": {"allowed_values": [], "minimum": 1, "maximum": 64, "pattern": null}},
    {"name": "host_label", "description": "A label.", "type": "string", "required": true, "default": null,
     "constraints": {"allowed_values": [], "minimum": null, "maximum": null, "pattern": "^[a-z0-9][a-z0-9._-]{1,63}$"}}
  ],
  "variants": [{
    "id": "cpu-true", "description": "On this host.", "backend": "cpu", "device_requirement": "none", "skip_policy": "allow",
    "effective_config": {"server": {"threads": 4, "flash_attention": false, "name": "true"}, "client": {"api": "none"}},
    "cases": [{
      "kind": "command", "id": "tool-present", "description": "true runs.", "required": true,
      "command": ["true", "${host_label}", "${batch}"], "working_directory": ".", "environment": {}, "timeout_seconds": 30,
      "expected_exit_codes": [0], "output_assertions": [],
      "result_protocol": {"format": "qualkit.case-result.v1", "producer": "runner", "path_environment_variable": "QUALKIT_CASE_RESULT", "declared_metrics": ["case_pass", "exit_code"]}
    }]
  }],
  "comparison_policy": {"mode": "self_contained_correctness", "variant_pairs": [], "backend_pairs": [], "metric_rules": []}
}
`

// configRepo commits the workload in a fresh git repository and returns its root.
func configRepo(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	commitRepo(t, dir, map[string]string{"workloads/config.json": configWorkload, ".gitignore": ".qualification/\n"})
	return dir
}

// commitRepo makes dir a git repository (branch main) whose one commit holds files.
func commitRepo(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	repo, err := git.PlainInitWithOptions(dir, &git.PlainInitOptions{InitOptions: git.InitOptions{DefaultBranch: plumbing.NewBranchReferenceName("main")}})
	if err != nil {
		t.Fatal(err)
	}
	wt, err := repo.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	for rel, content := range files {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := wt.Add(rel); err != nil {
			t.Fatal(err)
		}
	}
	sig := &object.Signature{Name: "Test", Email: "test@example.com", When: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)}
	if _, err := wt.Commit("workload", &git.CommitOptions{Author: sig, Committer: sig}); err != nil {
		t.Fatal(err)
	}
}

// TestEffectiveRunConfig runs a real campaign (a git repository, a committed workload, the true
// utility) and reads back the effective run configuration it wrote: a valid
// qualkit.effective-run-config.v1 carrying exactly what the campaign resolved, bound in the receipt
// as a config_file with its digest. Without model flags the model members are null.
func TestEffectiveRunConfig(t *testing.T) {
	if _, err := os.Stat("/bin/true"); err != nil {
		if _, err := os.Stat("/usr/bin/true"); err != nil {
			t.Skip("no true utility")
		}
	}
	for _, tc := range []struct {
		name, corpus    string
		modelDir, model string
		wantDir, wantID any
		vars            []string
		wantVars        map[string]any
	}{
		{"model flags", "command-case-model-flags.json", "MODEL", "tiny-model", "MODEL", "tiny-model", []string{"host_label=ci-01", "batch=16"}, map[string]any{"host_label": "ci-01", "batch": float64(16)}},
		{"no model flags, defaults", "command-case-defaults.json", "", "", nil, nil, []string{"host_label=ci-02"}, map[string]any{"host_label": "ci-02", "batch": float64(8)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := configRepo(t)
			modelDir := tc.modelDir
			if modelDir == "MODEL" {
				modelDir = t.TempDir()
				if err := os.WriteFile(filepath.Join(modelDir, "config.json"), []byte(`{"layers": 2}`), 0o644); err != nil {
					t.Fatal(err)
				}
				tc.wantDir = modelDir
			}
			command := []string{"qualrun", "run", "workloads/config.json", "--variant", "cpu-true", "--host-id", "ci-host"}
			p, err := Preflight(context.Background(), Config{Workload: filepath.Join(root, "workloads/config.json"), Variant: "cpu-true",
				HostID: "ci-host", Output: filepath.Join(root, ".qualification/receipts/run.json"), Vars: tc.vars, ModelDir: modelDir,
				ModelID: tc.model, AllowUnpublishedUnsafe: true, Command: command, Version: "test-1.0",
				BinaryDigest: "sha256:" + strings.Repeat("ab", 32)})
			if err != nil {
				t.Fatal(err)
			}
			out, err := p.Run(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			rel := out.RunDir + "/effective-run-config.json"
			raw, err := os.ReadFile(filepath.Join(root, rel))
			if err != nil {
				t.Fatal(err)
			}
			if err := schemas.CheckAs(raw, rel, contract.EffectiveRunConfig); err != nil {
				t.Fatal(err)
			}
			var got map[string]any
			if err := json.Unmarshal(raw, &got); err != nil {
				t.Fatal(err)
			}
			want := map[string]any{
				"schema":           "qualkit.effective-run-config.v1",
				"workload":         map[string]any{"id": "effective-config", "path": "workloads/config.json", "variant": "cpu-true"},
				"variables":        tc.wantVars,
				"seed":             float64(42),
				"effective_config": map[string]any{"server": map[string]any{"threads": float64(4), "flash_attention": false, "name": "true"}, "client": map[string]any{"api": "none"}},
				"model_dir":        tc.wantDir,
				"model_id":         tc.wantID,
				"qualrun":          map[string]any{"command": []any{"qualrun", "run", "workloads/config.json", "--variant", "cpu-true", "--host-id", "ci-host"}, "version": "test-1.0"},
			}
			gb, _ := json.Marshal(got)
			wb, _ := json.Marshal(want)
			if !bytes.Equal(gb, wb) {
				t.Errorf("effective run configuration\n got %s\nwant %s", gb, wb)
			}
			// The corpus keeps what the campaign wrote, the temporary model directory named /srv/models/tiny.
			doc := raw
			if modelDir != "" {
				doc = bytes.ReplaceAll(raw, []byte(modelDir), []byte("/srv/models/tiny"))
			}
			corpus := filepath.Join("..", "..", "schemas", "testdata", contract.EffectiveRunConfig, "valid", tc.corpus)
			if *updateCorpus {
				if err := os.WriteFile(corpus, doc, 0o644); err != nil {
					t.Fatal(err)
				}
			} else if cb, err := os.ReadFile(corpus); err != nil || !bytes.Equal(cb, doc) {
				t.Errorf("%s differs from what the campaign writes now (-update-corpus rewrites it): %v", corpus, err)
			}
			// The values are the receipt's.
			rw := out.Receipt.Workload
			var doc2 contract.EffectiveRunConfigDoc
			if err := jsonstrict.DecodeInto(raw, &doc2); err != nil {
				t.Fatal(err)
			}
			if doc2.Workload.ID != rw.ID || doc2.Workload.Path != rw.Path || doc2.Workload.Variant != rw.Variant || *doc2.Seed != *rw.Seed ||
				!reflect.DeepEqual(doc2.Qualrun.Command, out.Receipt.Qualification.Command) || len(doc2.Variables) != len(rw.Variables) {
				t.Errorf("the effective run configuration differs from the receipt: %+v, receipt %+v", doc2, rw)
			}
			for k, v := range rw.Variables {
				if fmt.Sprint(doc2.Variables[k]) != fmt.Sprint(v) {
					t.Errorf("variable %s: %v, the receipt %v", k, doc2.Variables[k], v)
				}
			}
			bound := false
			for _, a := range out.Receipt.Artifacts {
				if a.Path == rel {
					bound = a.Kind == "config_file" && a.Digest == evidence.DigestOf(raw) && a.Bytes == int64(len(raw))
				}
			}
			if !bound {
				t.Errorf("the receipt does not bind %s as a config_file with its digest: %+v", rel, out.Receipt.Artifacts)
			}
		})
	}
}

// TestEffectiveRunConfigRefusesInvalid: a configuration that would not satisfy its contract (here
// qualrun's argv is empty) is a bug that stops the campaign before anything is created.
func TestEffectiveRunConfigRefusesInvalid(t *testing.T) {
	root := configRepo(t)
	p, err := Preflight(context.Background(), Config{Workload: filepath.Join(root, "workloads/config.json"), Variant: "cpu-true",
		HostID: "ci-host", Output: filepath.Join(root, ".qualification/receipts/run.json"), Vars: []string{"host_label=ci-01"},
		AllowUnpublishedUnsafe: true, Version: "test-1.0", BinaryDigest: "sha256:" + strings.Repeat("ab", 32)})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "the effective run configuration does not validate") || !strings.Contains(err.Error(), "/qualrun/command") {
		t.Fatalf("Run = %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, ".qualification")); !os.IsNotExist(err) {
		t.Errorf("the campaign created .qualification: %v", err)
	}
}
