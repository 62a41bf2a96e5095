package evidence

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

// ErrNotRegular is wrapped by ReadFileLimited and OpenRegular when a path names something other
// than a regular file (a FIFO, a device, a directory, a socket): such inputs are refused before a
// byte is read, so a FIFO cannot block and /dev/zero cannot exhaust memory.
var ErrNotRegular = errors.New("not a regular file")

// ErrFileTooLarge is wrapped by ReadFileLimited when a file is larger than the named limit. The size
// is checked with fstat before reading, so an 8 GiB sparse file is refused at once.
var ErrFileTooLarge = errors.New("larger than the limit")

// OpenRegular opens path for reading without blocking (O_NONBLOCK, so opening a FIFO with no
// writer returns at once) and returns it only when it is a regular file of at most limit bytes
// (limit < 0: no size limit). The caller closes the file.
func OpenRegular(path string, limit int64) (*os.File, int64, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, 0, err
	}
	return regularWithin(f, path, limit)
}

// regularWithin returns f with its size when it is a regular file of at most limit bytes (limit
// < 0: no limit), checked with fstat; otherwise it closes f and names it as name.
func regularWithin(f *os.File, name string, limit int64) (*os.File, int64, error) {
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, 0, fmt.Errorf("%s: %w (%s)", name, ErrNotRegular, fileKind(st.Mode()))
	}
	if limit >= 0 && st.Size() > limit {
		f.Close()
		return nil, 0, fmt.Errorf("%s is %d bytes, %w of %d bytes", name, st.Size(), ErrFileTooLarge, limit)
	}
	return f, st.Size(), nil
}

// ReadFileLimited reads a regular file of at most limit bytes: the way every qualkit module reads
// an untrusted document (a receipt, a policy, a case result, a workload) before parsing it. It
// never blocks on a FIFO and never reads more than limit+1 bytes, even when the file grows.
func ReadFileLimited(path string, limit int64) ([]byte, error) {
	f, _, err := OpenRegular(path, limit)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s grew past %d bytes while read: %w", path, limit, ErrFileTooLarge)
	}
	return data, nil
}

func fileKind(m os.FileMode) string {
	switch {
	case m&os.ModeNamedPipe != 0:
		return "a FIFO"
	case m&os.ModeDevice != 0:
		return "a device"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m.IsDir():
		return "a directory"
	case m&os.ModeSymlink != 0:
		return "a symlink"
	default:
		return "mode " + m.String()
	}
}
