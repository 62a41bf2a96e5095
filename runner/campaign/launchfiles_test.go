package campaign

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/qualkit/qualkit/runner/redact"
	"github.com/qualkit/qualkit/schemas/contract"
)

// TestLaunchFilesSecret: of the files a launch recipe names, a tracked file is bound by content;
// a gitignored key, an untracked file and a tracked file that holds a redacted variable's value
// are not, each recorded with its reason (a real git repository, git check-ignore and the
// redactor's search).
func TestLaunchFilesSecret(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	dir := t.TempDir()
	const token = "hf_0123456789abcdefSECRET"
	for rel, body := range map[string]string{
		".gitignore":         "secrets/\n",
		"conf/server.toml":   "port = 8000\n",
		"conf/with-token.sh": "export HF_TOKEN=" + token + "\n",
		"secrets/server.key": "-----BEGIN PRIVATE KEY-----\n",
	} {
		os.MkdirAll(filepath.Join(dir, filepath.Dir(rel)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, rel), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git := func(args ...string) {
		cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_AUTHOR_NAME=q", "GIT_AUTHOR_EMAIL=q@example.invalid",
			"GIT_COMMITTER_NAME=q", "GIT_COMMITTER_EMAIL=q@example.invalid")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q", "-b", "main")
	git("add", ".gitignore", "conf")
	git("commit", "-q", "-m", "x")
	if err := os.WriteFile(filepath.Join(dir, "conf/local.toml"), []byte("x = 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := &Plan{root: dir, redactor: redact.New(redact.Secret{Name: "HF_TOKEN", Value: token})}
	r := &contract.LaunchRecipeDoc{
		Command:     []string{"server", "--config=conf/server.toml", "--ssl-keyfile", "secrets/server.key", "conf/local.toml"},
		Environment: map[string]string{"INIT_SCRIPT": "conf/with-token.sh"},
	}
	bound, secret := p.launchFiles(context.Background(), r, dir)
	if len(bound) != 1 || bound[0].Path != "conf/server.toml" || bound[0].Kind != contract.ArtifactKindConfigFile {
		t.Fatalf("bound %+v, want conf/server.toml alone", bound)
	}
	want := []contract.EffectiveRunSecretFile{
		{Path: "conf/local.toml", Reason: contract.SecretFileReasonUntracked},
		{Path: "conf/with-token.sh", Reason: contract.SecretFileReasonHoldsRedactedValue},
		{Path: "secrets/server.key", Reason: contract.SecretFileReasonGitignored},
	}
	if len(secret) != len(want) {
		t.Fatalf("secret %+v, want %+v", secret, want)
	}
	for i := range want {
		if secret[i] != want[i] {
			t.Errorf("secret[%d] = %+v, want %+v", i, secret[i], want[i])
		}
	}
}
