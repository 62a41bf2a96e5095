package evidence

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
)

// ErrSymlink is wrapped by OpenBeneath when a component of the path (the last one included) is a
// symbolic link: evidence is read only through real directories and regular files, so a link
// cannot point a bound path at other bytes, inside the directory or outside it.
var ErrSymlink = errors.New("a symbolic link in the path")

// ErrOutside is wrapped by OpenBeneath when a path is not a clean relative path below the
// directory (absolute, a ".." or "." component, an empty component, a backslash or a NUL).
var ErrOutside = errors.New("not a clean path below the directory")

// OpenBeneath opens rel, a slash-separated path relative to the directory dir, for reading:
// without blocking (O_NONBLOCK, so a FIFO with no writer returns at once), without following a
// symbolic link in any component (ErrSymlink), never leaving dir (ErrOutside), and only when it is
// a regular file (ErrNotRegular) of at most limit bytes (ErrFileTooLarge; limit < 0: no size limit),
// checked with fstat before a byte is read. On Linux it is one openat2(2) call with
// RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS|RESOLVE_NO_MAGICLINKS; where the kernel lacks openat2 (or a
// sandbox refuses it) every component is opened in turn with O_NOFOLLOW. A missing file wraps
// fs.ErrNotExist. The caller closes the file.
func OpenBeneath(dir *os.File, rel string, limit int64) (*os.File, int64, error) {
	if err := CheckBeneath(rel); err != nil {
		return nil, 0, err
	}
	f, err := openBeneath(dir, rel)
	if err != nil {
		return nil, 0, err
	}
	return regularWithin(f, rel, limit)
}

// ReadBeneath reads rel below dir as OpenBeneath opens it, at most limit bytes (limit >= 0).
func ReadBeneath(dir *os.File, rel string, limit int64) ([]byte, error) {
	f, _, err := OpenBeneath(dir, rel, limit)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", rel, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s grew past %d bytes while read: %w", rel, limit, ErrFileTooLarge)
	}
	return data, nil
}

// CheckBeneath refuses a path that is not clean and relative: empty, absolute, with a backslash
// or NUL, or with an empty, "." or ".." component (ErrOutside).
func CheckBeneath(rel string) error {
	if rel == "" || strings.HasPrefix(rel, "/") || strings.ContainsAny(rel, "\\\x00") {
		return fmt.Errorf("%q: %w", rel, ErrOutside)
	}
	for _, c := range strings.Split(rel, "/") {
		if c == "" || c == "." || c == ".." {
			return fmt.Errorf("%q: %w", rel, ErrOutside)
		}
	}
	return nil
}

// openWalk opens rel one component at a time, each with O_NOFOLLOW: the portable fallback of
// openat2's RESOLVE_NO_SYMLINKS. checkBeneath has refused ".." and absolute paths, so the walk
// cannot leave dir.
func openWalk(dir *os.File, rel string) (*os.File, error) {
	parts := strings.Split(rel, "/")
	fd := int(dir.Fd())
	owned := -1
	defer func() {
		if owned >= 0 {
			syscall.Close(owned)
		}
	}()
	for _, c := range parts {
		// No O_DIRECTORY on the directories: with it, a link is ENOTDIR, not ELOOP. A component
		// that is not a directory fails the next openat with ENOTDIR.
		next, err := openatRetry(fd, c, syscall.O_RDONLY|syscall.O_CLOEXEC|syscall.O_NOFOLLOW|syscall.O_NONBLOCK)
		if err != nil {
			return nil, pathError(rel, err)
		}
		if owned >= 0 {
			syscall.Close(owned)
		}
		owned, fd = next, next
	}
	f := os.NewFile(uintptr(owned), rel)
	owned = -1
	return f, nil
}

func openatRetry(fd int, name string, flags int) (int, error) {
	for {
		n, err := syscall.Openat(fd, name, flags, 0)
		if err != syscall.EINTR {
			return n, err
		}
	}
}

// pathError maps an open errno to the sentinels: ELOOP means a symbolic link (O_NOFOLLOW,
// RESOLVE_NO_SYMLINKS), EXDEV a path that would leave the directory (RESOLVE_BENEATH).
func pathError(rel string, err error) error {
	switch {
	case errors.Is(err, syscall.ELOOP):
		return fmt.Errorf("%s: %w", rel, ErrSymlink)
	case errors.Is(err, syscall.EXDEV):
		return fmt.Errorf("%s: %w", rel, ErrOutside)
	}
	return &os.PathError{Op: "open", Path: rel, Err: err}
}
