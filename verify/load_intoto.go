package verify

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/qualkit/qualkit/schemas/attestfmt"
	"github.com/qualkit/qualkit/verify/internal/limits"
)

// inTotoLink is one link file found beside the receipt.
type inTotoLink struct {
	path    string
	readErr error
	raw     []byte
}

// loadInTotoLinks reads the files DIR/NAME.in-toto/qualkit-campaign.*.link of the receipt
// DIR/NAME.json. A missing directory is no link (links are optional).
func loadInTotoLinks(rootDir string, root *os.File, receipt string) []*inTotoLink {
	dir := strings.TrimSuffix(receipt, ".json") + attestfmt.LinkDirSuffix
	fi, err := os.Lstat(filepath.Join(rootDir, filepath.FromSlash(dir)))
	if err != nil {
		return nil
	}
	if !fi.IsDir() {
		return []*inTotoLink{{path: dir, readErr: fmt.Errorf("%s is not a directory", dir)}}
	}
	entries, err := os.ReadDir(filepath.Join(rootDir, filepath.FromSlash(dir)))
	if err != nil {
		return []*inTotoLink{{path: dir, readErr: err}}
	}
	var out []*inTotoLink
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), attestfmt.StepName+".") || !strings.HasSuffix(e.Name(), attestfmt.LinkSuffix) {
			continue
		}
		f := &fileFacts{path: dir + "/" + e.Name(), kind: "intoto_link", local: true, wantBytes: -1}
		l := &inTotoLink{path: f.path}
		if err := readWhole(root, f, limits.MaxLinkBytes); err != nil {
			l.readErr = err
		} else if f.readErr != nil {
			l.readErr = f.readErr
		}
		l.raw = f.raw
		out = append(out, l)
	}
	return out
}
