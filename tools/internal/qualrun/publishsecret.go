package qualrun

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"path"
	"path/filepath"
	"strings"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/evidence"
	"github.com/qualkit/qualkit/schemas/jsonstrict"
	"github.com/qualkit/qualkit/tools/internal/cliapp"
	"github.com/qualkit/qualkit/tools/internal/exitcode"
)

// evidenceDirs hold what qualrun writes (receipts, runs): ignored or untracked by design, never a
// repository file a launch recipe named.
var evidenceDirs = []string{".qualification/", "qualification/"}

// secretBound lists the config files the receipt (receiptRel, relative to root) binds from the repository at root (outside the
// evidence directories) that git reports gitignored or untracked, each with its reason: secret
// files (a private key, a token file) that a qualrun before secret files were recognised bound by
// content. qualrun publish refuses such a receipt rather than push them. A root that is not a git
// repository has nothing git can report.
func secretBound(ctx context.Context, root, receiptRel string) ([]string, error) {
	receiptPath := filepath.Join(root, filepath.FromSlash(receiptRel))
	raw, err := evidence.ReadFileLimited(receiptPath, jsonstrict.MaxDocumentBytes)
	if err != nil {
		return nil, fmt.Errorf("read receipt %s: %w", receiptPath, err)
	}
	var rc contract.ReceiptDoc
	if err := json.Unmarshal(raw, &rc); err != nil {
		return nil, fmt.Errorf("receipt %s: %w", receiptPath, err)
	}
	if exec.CommandContext(ctx, "git", "-C", root, "rev-parse", "--git-dir").Run() != nil {
		return nil, nil
	}
	var out []string
	for _, a := range rc.Artifacts {
		p := path.Clean(a.Path)
		if a.Kind != contract.ArtifactKindConfigFile || path.IsAbs(p) || strings.HasPrefix(p, "../") || underAny(p, evidenceDirs) {
			continue
		}
		switch {
		case exec.CommandContext(ctx, "git", "-C", root, "check-ignore", "-q", "--no-index", "--", p).Run() == nil:
			out = append(out, p+" (gitignored)")
		case exec.CommandContext(ctx, "git", "-C", root, "ls-files", "--error-unmatch", "--", p).Run() != nil:
			out = append(out, p+" (untracked)")
		}
	}
	return out, nil
}

func underAny(p string, dirs []string) bool {
	for _, d := range dirs {
		if strings.HasPrefix(p, d) {
			return true
		}
	}
	return false
}

// refuseSecret prints why publish pushes nothing (a receipt that binds secret files, or one that
// cannot be read to find out) and returns the rejection.
func refuseSecret(w io.Writer, secret []string, err error) error {
	if err != nil {
		return fmt.Errorf("%w: publish: %v", exitcode.ErrUsage, err)
	}
	cliapp.Fprintf(w, "qualrun: publish refused: the receipt binds by content files the repository does not track, which may be secret: %s; nothing was pushed (run the campaign again with this qualrun: it records such files by path and reason only)\n",
		strings.Join(secret, ", "))
	return fmt.Errorf("%w: publish: the receipt binds secret files", exitcode.ErrRejected)
}
