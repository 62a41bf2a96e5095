package driver

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// openNoFollow opens path read-only without following a symlink in its last component and
// without blocking (a FIFO with no writer must not hang the preflight), and refuses anything but
// a regular file.
func openNoFollow(path string) (*os.File, os.FileInfo, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			return nil, nil, fmt.Errorf("%s is a symlink; name the file it points to", path)
		}
		return nil, nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, nil, fmt.Errorf("%s is not a regular file", path)
	}
	return f, st, nil
}

// hashedExecutable is the worker executable, open, with the digest of the bytes behind the descriptor.
type hashedExecutable struct {
	// path is the declared path with symlinks resolved (a system python3 is usually a link).
	path   string
	f      *os.File
	digest string
}

// openExecutable resolves the executable's symlinks once, opens the file O_NOFOLLOW and hashes
// it from the descriptor. The worker is later executed from this very descriptor.
func openExecutable(path string) (*hashedExecutable, error) {
	if !filepath.IsAbs(path) {
		return nil, fmt.Errorf("executable %q is not an absolute path", path)
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return nil, fmt.Errorf("executable %s: %w", path, err)
	}
	f, st, err := openNoFollow(real)
	if err != nil {
		return nil, fmt.Errorf("executable %s: %w", path, err)
	}
	if st.Mode().Perm()&0o111 == 0 {
		f.Close()
		return nil, fmt.Errorf("executable %s is not executable (mode %v)", real, st.Mode().Perm())
	}
	d, err := digestFD(int(f.Fd()))
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("hash executable %s: %w", real, err)
	}
	return &hashedExecutable{path: real, f: f, digest: d}, nil
}

// readBounded reads a whole regular file (no symlink in the last component) of at most limit bytes.
func readBounded(path string, limit int64) ([]byte, error) {
	f, st, err := openNoFollow(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st.Size() > limit {
		return nil, fmt.Errorf("%s has %d bytes, more than the limit of %d", path, st.Size(), limit)
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s grew beyond the limit of %d bytes while being read", path, limit)
	}
	return b, nil
}

// sealedMemfd returns a memfd holding exactly b, sealed against any change (write, grow,
// shrink, further seals). The worker reads its script from it as /proc/self/fd/4.
func sealedMemfd(name string, b []byte) (*os.File, error) {
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, fmt.Errorf("memfd_create: %w", err)
	}
	f := os.NewFile(uintptr(fd), "memfd:"+name)
	if _, err := f.Write(b); err != nil {
		f.Close()
		return nil, fmt.Errorf("write memfd: %w", err)
	}
	seals := unix.F_SEAL_WRITE | unix.F_SEAL_GROW | unix.F_SEAL_SHRINK | unix.F_SEAL_SEAL
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, seals); err != nil {
		f.Close()
		return nil, fmt.Errorf("seal memfd: %w", err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}
