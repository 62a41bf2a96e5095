package evidence

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestOpenBeneath: the openat2 path and the O_NOFOLLOW component walk refuse the same inputs, and
// none of them blocks: a FIFO, a symlink as the last component or as a directory, a path that
// leaves the directory, an 8 GiB sparse file over the limit.
func TestOpenBeneath(t *testing.T) {
	dir := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(dir, "a/b"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "a/b/file.json"), []byte("{}"), 0o644))
	must(os.WriteFile(filepath.Join(dir, "outside.json"), []byte("{}"), 0o644))
	must(syscall.Mkfifo(filepath.Join(dir, "a/fifo"), 0o600))
	must(os.Symlink("b/file.json", filepath.Join(dir, "a/link.json")))
	must(os.Symlink("b", filepath.Join(dir, "a/linkdir")))
	f, err := os.Create(filepath.Join(dir, "a/sparse"))
	must(err)
	must(f.Truncate(8 << 30))
	f.Close()
	root, err := os.Open(filepath.Join(dir, "a"))
	must(err)
	defer root.Close()

	cases := []struct {
		rel  string
		want error
	}{
		{"b/file.json", nil},
		{"fifo", ErrNotRegular},
		{"b", ErrNotRegular},
		{"link.json", ErrSymlink},
		{"linkdir/file.json", ErrSymlink},
		{"../outside.json", ErrOutside},
		{"b/../b/file.json", ErrOutside},
		{"/etc/passwd", ErrOutside},
		{"./b/file.json", ErrOutside},
		{"missing.json", fs.ErrNotExist},
		{"sparse", ErrFileTooLarge},
	}
	openers := map[string]func(string) error{
		"OpenBeneath": func(rel string) error {
			f, _, err := OpenBeneath(root, rel, 64<<20)
			if err == nil {
				f.Close()
			}
			return err
		},
		"component walk": func(rel string) error {
			if err := CheckBeneath(rel); err != nil {
				return err
			}
			f, err := openWalk(root, rel)
			if err != nil {
				return err
			}
			defer f.Close()
			st, _ := f.Stat()
			switch {
			case !st.Mode().IsRegular():
				return ErrNotRegular
			case st.Size() > 64<<20:
				return ErrFileTooLarge
			}
			return nil
		},
	}
	for name, open := range openers {
		for _, c := range cases {
			done := make(chan error, 1)
			go func() { done <- open(c.rel) }()
			select {
			case err := <-done:
				if (c.want == nil) != (err == nil) || (c.want != nil && !errors.Is(err, c.want)) {
					t.Errorf("%s(%s) = %v, want %v", name, c.rel, err, c.want)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("%s(%s) blocked", name, c.rel)
			}
		}
	}
	b, err := ReadBeneath(root, "b/file.json", 2)
	if err != nil || string(b) != "{}" {
		t.Fatalf("ReadBeneath = %q, %v", b, err)
	}
	if _, err := ReadBeneath(root, "b/file.json", 1); !errors.Is(err, ErrFileTooLarge) {
		t.Fatalf("ReadBeneath over the limit = %v", err)
	}
}

// FuzzOpenBeneath: whatever the path, OpenBeneath never opens a file outside its directory, nor
// one reached through a symlink, and never blocks (a FIFO sits in the directory).
func FuzzOpenBeneath(f *testing.F) {
	dir := f.TempDir()
	inside := filepath.Join(dir, "in")
	for _, p := range []string{"in/d", "out"} {
		if err := os.MkdirAll(filepath.Join(dir, p), 0o755); err != nil {
			f.Fatal(err)
		}
	}
	for _, p := range []string{"in/a.json", "in/d/b.json", "out/secret.json"} {
		if err := os.WriteFile(filepath.Join(dir, p), []byte("{}"), 0o644); err != nil {
			f.Fatal(err)
		}
	}
	if err := os.Symlink("../out/secret.json", filepath.Join(inside, "link.json")); err != nil {
		f.Fatal(err)
	}
	if err := os.Symlink("d", filepath.Join(inside, "dlink")); err != nil {
		f.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(inside, "fifo"), 0o600); err != nil {
		f.Skip(err)
	}
	root, err := os.Open(inside)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { root.Close() })
	secret, _ := os.Stat(filepath.Join(dir, "out/secret.json"))
	linked, _ := os.Stat(filepath.Join(inside, "d/b.json"))
	for _, s := range []string{"a.json", "d/b.json", "link.json", "dlink/b.json", "../out/secret.json", "fifo", "d/../a.json"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, rel string) {
		fh, _, err := OpenBeneath(root, rel, 1<<20)
		if err != nil {
			return
		}
		defer fh.Close()
		st, err := fh.Stat()
		if err != nil {
			t.Fatal(err)
		}
		if os.SameFile(st, secret) {
			t.Fatalf("%q opened the file outside the directory", rel)
		}
		if os.SameFile(st, linked) && rel != "d/b.json" {
			t.Fatalf("%q opened d/b.json through a symlink", rel)
		}
	})
}
