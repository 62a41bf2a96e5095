package evidence

import (
	"fmt"

	"github.com/opencontainers/go-digest"
)

// DigestOf returns the sha256 digest of b in go-digest form, "sha256:<64 lowercase hex>".
func DigestOf(b []byte) string { return digest.FromBytes(b).String() }

// DigestFile returns the sha256 digest and the size of a regular file (opened without blocking: a
// FIFO or device is refused with ErrNotRegular).
func DigestFile(path string) (string, int64, error) {
	f, _, err := OpenRegular(path, -1)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	d, err := digest.SHA256.FromReader(f)
	if err != nil {
		return "", 0, fmt.Errorf("hash %s: %w", path, err)
	}
	st, err := f.Stat()
	if err != nil {
		return "", 0, err
	}
	return d.String(), st.Size(), nil
}
