package evidence

import (
	"errors"
	"os"
	"sync/atomic"
	"syscall"
	"unsafe"
)

// openat2(2), Linux 5.6 and later: the syscall number is the same on every architecture.
const (
	sysOpenat2          = 437
	resolveNoMagiclinks = 0x02
	resolveNoSymlinks   = 0x04
	resolveBeneath      = 0x08
)

type openHow struct {
	flags   uint64
	mode    uint64
	resolve uint64
}

// noOpenat2 is set once openat2 turned out to be missing (ENOSYS) or refused by a sandbox (EPERM).
var noOpenat2 atomic.Bool

func openBeneath(dir *os.File, rel string) (*os.File, error) {
	if noOpenat2.Load() {
		return openWalk(dir, rel)
	}
	fd, err := openat2(int(dir.Fd()), rel, &openHow{
		flags:   uint64(syscall.O_RDONLY | syscall.O_CLOEXEC | syscall.O_NONBLOCK | syscall.O_NOFOLLOW),
		resolve: resolveBeneath | resolveNoSymlinks | resolveNoMagiclinks,
	})
	if errors.Is(err, syscall.ENOSYS) || errors.Is(err, syscall.EPERM) {
		noOpenat2.Store(true)
		return openWalk(dir, rel)
	}
	if err != nil {
		return nil, pathError(rel, err)
	}
	return os.NewFile(uintptr(fd), rel), nil
}

func openat2(dirfd int, path string, how *openHow) (int, error) {
	p, err := syscall.BytePtrFromString(path)
	if err != nil {
		return -1, err
	}
	for {
		r, _, errno := syscall.Syscall6(sysOpenat2, uintptr(dirfd), uintptr(unsafe.Pointer(p)), uintptr(unsafe.Pointer(how)), unsafe.Sizeof(*how), 0, 0)
		if errno == syscall.EINTR {
			continue
		}
		if errno != 0 {
			return -1, errno
		}
		return int(r), nil
	}
}
