package tools_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/qualkit/qualkit/tools/internal/qualrun"
	"github.com/qualkit/qualkit/tools/internal/qualverify"
	"github.com/rogpeppe/go-internal/testscript"
)

// TestMain registers the real CLIs as testscript commands: a script's `exec qualverify ...` runs
// the same Main the installed binary runs, in a child process.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"qualverify": func() { os.Exit(qualverify.Main(os.Args, os.Stdout, os.Stderr)) },
		"qualrun":    func() { os.Exit(qualrun.Main(os.Args, os.Stdout, os.Stderr)) },
	})
}

// TestScripts runs every tools/testdata/script/*.txtar. $REPO is the repository root, so scripts
// can reach the committed workloads, fixtures and corpus.
func TestScripts(t *testing.T) {
	repo, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
		Setup: func(env *testscript.Env) error {
			env.Setenv("REPO", repo)
			env.Setenv("SHARED", filepath.Join(repo, "..", "shared"))
			return nil
		},
	})
}
