package verify

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qualkit/qualkit/schemas/evidence"
	"github.com/qualkit/qualkit/verify/internal/gitobj"
)

// TestReadCheckoutStaysBeneathGitDir: a symbolic ref, a symlinked ref or a ref file that does not
// parse never makes gitobj.ReadCheckout read outside the git directory, and no error quotes the bytes of
// a file it could not parse (they may be any local file's: /proc/self/environ).
func TestReadCheckoutStaysBeneathGitDir(t *testing.T) {
	const secret = "QUALKIT_SECRET=hunter2"
	outside := t.TempDir()
	mustWrite(t, filepath.Join(outside, "environ"), []byte(secret+"\n"))
	head := strings.Repeat("a", 40)
	mk := func(files map[string]string, links map[string]string) string {
		root := t.TempDir()
		for p, c := range files {
			os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755)
			mustWrite(t, filepath.Join(root, p), []byte(c))
		}
		for p, target := range links {
			os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755)
			if err := os.Symlink(target, filepath.Join(root, p)); err != nil {
				t.Fatal(err)
			}
		}
		return root
	}
	up := strings.Repeat("../", 12) + strings.TrimPrefix(filepath.Join(outside, "environ"), "/")
	for _, tc := range []struct {
		name string
		root string
		want error
	}{
		{"symbolic ref out of the tree", mk(map[string]string{".git/HEAD": "ref: " + up + "\n"}, nil), gitobj.ErrMetadata},
		{"symbolic ref to refs/../..", mk(map[string]string{".git/HEAD": "ref: refs/../../" + up + "\n"}, nil), gitobj.ErrMetadata},
		{"HEAD is not a ref", mk(map[string]string{".git/HEAD": secret + "\n"}, nil), gitobj.ErrMetadata},
		{"ref symlinked outside", mk(map[string]string{".git/HEAD": "ref: refs/heads/main\n"}, map[string]string{".git/refs/heads/main": filepath.Join(outside, "environ")}), evidence.ErrSymlink},
		{"HEAD symlinked outside", mk(nil, map[string]string{".git/HEAD": filepath.Join(outside, "environ")}), evidence.ErrSymlink},
		{"gitdir file that does not parse", mk(map[string]string{".git": secret}, nil), gitobj.ErrMetadata},
	} {
		co, err := gitobj.ReadCheckout(tc.root)
		if co != nil || !errors.Is(err, tc.want) {
			t.Errorf("%s: %+v, %v; want an error wrapping %v", tc.name, co, err, tc.want)
			continue
		}
		if strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%s: the error quotes the file's bytes: %v", tc.name, err)
		}
	}
	// A genuine checkout still reads.
	if co, err := gitobj.ReadCheckout(mk(map[string]string{".git/HEAD": "ref: refs/heads/main\n", ".git/refs/heads/main": head + "\n"}, nil)); err != nil || co.Head != head {
		t.Fatalf("genuine checkout: %+v, %v", co, err)
	}
}
