package verify

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// campaignCheckout makes a copy of the frozen evidence a real git checkout whose one commit holds
// everything but .qualification/ (what a campaign reads), binds receipt to that commit (tree, tree
// hash, origin/main) and reseals it. edit runs between the copy and the commit, so a test can
// commit inputs that differ from the ones the receipt binds.
func campaignCheckout(t *testing.T, receipt string, k testKey, edit func(root string)) (root, commit string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	root = copyTree(t, frozenRoot)
	gitCmd(t, root, "init", "-q", "-b", "main")
	mustWrite(t, filepath.Join(root, ".gitignore"), []byte(".qualification/\n"))
	if edit != nil {
		edit(root)
	}
	gitCmd(t, root, "add", "-A")
	gitCmd(t, root, "commit", "-q", "-m", "campaign source")
	commit = gitCmd(t, root, "rev-parse", "HEAD")
	tree := gitCmd(t, root, "rev-parse", "HEAD^{tree}")
	hash := treeHashByGit(t, root, commit)
	editJSON(t, filepath.Join(root, receipt), func(rc map[string]any) {
		src := rc["source"].(map[string]any)
		src["commit"], src["tree"], src["tree_hash"], src["origin_main"] = commit, tree, hash, commit
	})
	reseal(t, root, receipt, k)
	return root, commit
}

// TestInputsComparedWithCommit: the workload, launch recipes and corpus files the receipt binds are
// the blobs of the commit it names. On 4822f1d verify recomputed the commit's tree hash and
// re-hashed the inputs from the working tree, and never compared the two: a receipt naming a
// commit whose recipe was another verified.
func TestInputsComparedWithCommit(t *testing.T) {
	const receipt = ".qualification/receipts/a-1.json"
	k := newTestKey(t)
	p := k.policy()
	p.RequirePublishable = false
	recipe := "workloads/launch/frozen-a.json"
	cases := []struct {
		name string
		// committed changes what the commit holds; the working tree (and the receipt) keep the
		// frozen bytes.
		committed func(t *testing.T, root string)
		also      string
	}{
		{"the commit's recipe is another", func(t *testing.T, root string) {
			b, _ := os.ReadFile(filepath.Join(root, recipe))
			mustWrite(t, filepath.Join(root, recipe), bytes.Replace(b, []byte(`"startup_timeout_seconds": 10`), []byte(`"startup_timeout_seconds": 120`), 1))
		}, "workloads/launch/frozen-a.json as sha256:"},
		{"the workload is not in the commit", func(t *testing.T, root string) {
			mustWrite(t, filepath.Join(root, ".gitignore"), []byte(".qualification/\nworkloads/frozen.json\n"))
		}, "workloads/frozen.json is not a file of commit"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var saved map[string][]byte
			root, _ := campaignCheckout(t, receipt, k, func(root string) {
				saved = map[string][]byte{}
				for _, f := range []string{recipe, "workloads/frozen.json"} {
					saved[f], _ = os.ReadFile(filepath.Join(root, f))
				}
				tc.committed(t, root)
			})
			for f, b := range saved { // the working tree holds what the receipt binds
				mustWrite(t, filepath.Join(root, f), b)
			}
			reseal(t, root, receipt, k)
			res := verifyAt(t, root, receipt, p)
			if !hasFinding(res, CheckSource, ErrInputNotInCommit, tc.also) {
				t.Fatalf("no input_not_in_commit naming %q:%s", tc.also, findingsOf(res))
			}
			dirty := false
			for _, w := range res.Warnings {
				dirty = dirty || strings.Contains(w, "working tree differs from its HEAD")
			}
			if tc.name == "the commit's recipe is another" && !dirty {
				t.Errorf("a working tree that differs from HEAD is not said: %q", res.Warnings)
			}
		})
	}
	t.Run("the commit's inputs verify", func(t *testing.T) {
		root, _ := campaignCheckout(t, receipt, k, nil)
		res := verifyAt(t, root, receipt, p)
		if res.Verdict != Verified {
			t.Fatalf("rejected:%s", findingsOf(res))
		}
		for _, w := range res.Warnings {
			if strings.Contains(w, "working tree differs") {
				t.Errorf("clean working tree said dirty: %s", w)
			}
		}
	})
}

// TestConfigFileComparedWithCommit: a config file the receipt binds (here qualsim's --config of
// the apis shape) is the blob of the commit where the commit holds one; its edit in the
// repository, re-bound and re-signed, verified before (hmut's mutation closure listed it open).
// A config file the commit does not hold (untracked or ignored) is not compared.
func TestConfigFileComparedWithCommit(t *testing.T) {
	const receipt = ".qualification/receipts/apis.json"
	k := newTestKey(t)
	p := k.policy()
	p.RequirePublishable = false
	var config string
	for _, a := range readTree(t, filepath.Join(mutationRoot, "apis", receipt))["artifacts"].([]any) {
		if m := a.(map[string]any); m["kind"] == "config_file" && !strings.HasPrefix(m["path"].(string), "/") {
			config = m["path"].(string)
			break
		}
	}
	if config == "" {
		t.Fatal("the apis shape binds no config file in the repository")
	}
	for _, tc := range []struct {
		name      string
		committed func(t *testing.T, root string) // what the commit holds instead
		want      bool
	}{
		{"the commit's config is another", func(t *testing.T, root string) {
			b, err := os.ReadFile(filepath.Join(root, config))
			if err != nil {
				t.Fatal(err)
			}
			mustWrite(t, filepath.Join(root, config), append(b, ' '))
		}, true},
		{"the config is not in the commit", func(t *testing.T, root string) {
			mustWrite(t, filepath.Join(root, ".gitignore"), []byte(".qualification/\n"+config+"\n"))
		}, false},
		{"the commit's config", func(*testing.T, string) {}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := copyTree(t, filepath.Join(mutationRoot, "apis"))
			saved, err := os.ReadFile(filepath.Join(root, config))
			if err != nil {
				t.Fatal(err)
			}
			tc.committed(t, root)
			checkoutShape(t, root, receipt)
			mustWrite(t, filepath.Join(root, config), saved) // the working tree holds what the receipt binds
			reseal(t, root, receipt, k)
			res := verifyAt(t, root, receipt, p)
			if got := hasFinding(res, CheckSource, ErrInputNotInCommit, config); got != tc.want {
				t.Fatalf("input_not_in_commit naming %s: %v, want %v:%s", config, got, tc.want, findingsOf(res))
			}
		})
	}
}
