package load

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/qualkit/qualkit/schemas/attestfmt"
	"github.com/qualkit/qualkit/verify/internal/limits"
)

// InTotoLink is one link file found beside the receipt.
type InTotoLink struct {
	Path    string
	ReadErr error
	Raw     []byte
}

// LoadInTotoLinks reads the files DIR/NAME.in-toto/qualkit-campaign.*.link of the receipt
// DIR/NAME.json. A missing directory is no link (links are optional).
func loadInTotoLinks(rootDir string, root *os.File, receipt string) []*InTotoLink {
	dir := strings.TrimSuffix(receipt, ".json") + attestfmt.LinkDirSuffix
	fi, err := os.Lstat(filepath.Join(rootDir, filepath.FromSlash(dir)))
	if err != nil {
		return nil
	}
	if !fi.IsDir() {
		return []*InTotoLink{{Path: dir, ReadErr: fmt.Errorf("%s is not a directory", dir)}}
	}
	entries, err := os.ReadDir(filepath.Join(rootDir, filepath.FromSlash(dir)))
	if err != nil {
		return []*InTotoLink{{Path: dir, ReadErr: err}}
	}
	var out []*InTotoLink
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), attestfmt.StepName+".") || !strings.HasSuffix(e.Name(), attestfmt.LinkSuffix) {
			continue
		}
		f := &File{Path: dir + "/" + e.Name(), Kind: "intoto_link", Local: true, wantBytes: -1}
		l := &InTotoLink{Path: f.Path}
		if err := readWhole(root, f, limits.MaxLinkBytes); err != nil {
			l.ReadErr = err
		} else if f.ReadErr != nil {
			l.ReadErr = f.ReadErr
		}
		l.Raw = f.Raw
		out = append(out, l)
	}
	return out
}
