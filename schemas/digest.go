package schemas

import (
	"fmt"
	"os"

	"github.com/opencontainers/go-digest"
)

// DigestOf returns the sha256 digest of b in go-digest form, "sha256:<64 lowercase hex>".
func DigestOf(b []byte) string { return digest.FromBytes(b).String() }

// DigestFile returns the sha256 digest and the size of a file's bytes.
func DigestFile(path string) (string, int64, error) {
	f, err := os.Open(path)
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
