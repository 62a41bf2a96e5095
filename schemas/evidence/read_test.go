package evidence

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

func TestReadFileLimitedRefusesWithoutBlocking(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	sparse := filepath.Join(dir, "sparse")
	f, err := os.Create(sparse)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(8 << 30); err != nil {
		t.Fatal(err)
	}
	f.Close()
	small := filepath.Join(dir, "small")
	if err := os.WriteFile(small, []byte("0123456789"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		path  string
		limit int64
		want  error
	}{
		{fifo, 1 << 20, ErrNotRegular},
		{dir, 1 << 20, ErrNotRegular},
		{"/dev/zero", 1 << 20, ErrNotRegular},
		{sparse, 64 << 20, ErrFileTooLarge},
		{small, 9, ErrFileTooLarge},
	}
	for _, c := range cases {
		done := make(chan error, 1)
		go func() { _, err := ReadFileLimited(c.path, c.limit); done <- err }()
		select {
		case err := <-done:
			if !errors.Is(err, c.want) {
				t.Errorf("ReadFileLimited(%s) = %v, want %v", c.path, err, c.want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("ReadFileLimited(%s) blocked", c.path)
		}
	}
	b, err := ReadFileLimited(small, 10)
	if err != nil || string(b) != "0123456789" {
		t.Fatalf("ReadFileLimited(small, 10) = %q, %v", b, err)
	}
}
