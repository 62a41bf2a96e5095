package qualverify

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/qualkit/qualkit/tools/internal/exitcode"
	"github.com/qualkit/qualkit/tools/internal/oci"
	"github.com/qualkit/qualkit/verify"
)

// pulls holds the temporary trees that oci:// arguments were pulled into; cleanup removes them.
type pulls struct{ dirs []string }

func (p *pulls) cleanup() {
	for _, d := range p.dirs {
		os.RemoveAll(d)
	}
}

// pull fetches the receipt artifact ref into a fresh temporary tree (bounded: oci.DefaultLimits)
// and returns its evidence. A reference that does not parse is a usage error; an artifact that
// breaks the layout, a limit or a digest is rejected; a reference the registry does not have is a
// usage error (as a receipt path that does not exist is); a registry that cannot be reached is an
// error (exit 3).
func (p *pulls) pull(ctx context.Context, arg string) (verify.Evidence, error) {
	ref, err := oci.ParseRef(arg)
	if err != nil {
		return verify.Evidence{}, fmt.Errorf("%w: %v", exitcode.ErrUsage, err)
	}
	dir, err := os.MkdirTemp("", "qualverify-oci-")
	if err != nil {
		return verify.Evidence{}, err
	}
	p.dirs = append(p.dirs, dir)
	got, err := oci.Pull(ctx, ref, dir, oci.DefaultLimits)
	switch {
	case errors.Is(err, oci.ErrReference) || errors.Is(err, oci.ErrNotFound):
		return verify.Evidence{}, fmt.Errorf("%w: %v", exitcode.ErrUsage, err)
	case errors.Is(err, oci.ErrRefused) || errors.Is(err, oci.ErrDigest):
		return verify.Evidence{}, fmt.Errorf("%w: %v", exitcode.ErrRejected, err)
	case err != nil:
		return verify.Evidence{}, err
	}
	ev, err := verify.LocateIn(dir, filepath.Join(dir, filepath.FromSlash(got.Receipt)))
	if err != nil {
		return ev, fmt.Errorf("%w: %s: %v", exitcode.ErrRejected, arg, err)
	}
	return ev, nil
}

// locateArg locates a receipt argument: a path (with root, as locate does) or an oci:// reference
// pulled into a temporary tree.
func (p *pulls) locateArg(ctx context.Context, arg, root string) (verify.Evidence, error) {
	if oci.IsRef(arg) {
		if root != "" {
			return verify.Evidence{}, fmt.Errorf("%w: --root does not apply to %s: the pulled tree is the root", exitcode.ErrUsage, arg)
		}
		return p.pull(ctx, arg)
	}
	return locate(arg, root)
}
