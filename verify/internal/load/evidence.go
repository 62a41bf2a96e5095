// Package load reads and bounds a receipt's evidence: it finds the evidence root (Locate), opens
// every file through an os.Root (no path escapes the root, no symlink is followed, only regular
// files, each size checked by fstat before a byte is read), hashes and validates each file once,
// reads the attestations (attestation.go), the in-toto links (intoto.go), the driver results
// (driver.go) and, from the checkout's git objects, the commit's blobs of the bound inputs
// (inputs.go), and returns one Snapshot that the checks read and never change.
package load

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/qualkit/qualkit/schemas/attestfmt"
)

// Evidence names one receipt and where its evidence lives. Every path in a receipt (artifacts,
// case results, request records, the lifecycle record) and every attestation subject is relative
// to Root, the root of the repository the campaign ran in (or a copy of its receipts and
// .qualification/runs/ directories).
type Evidence struct {
	// Root is the directory that evidence paths are relative to.
	Root string
	// Receipt is the receipt's path relative to Root, slash-separated (the name of the
	// Attestation's first subject).
	Receipt string
	// Envelope is the DSSE envelope (NAME.intoto.dsse.json beside the receipt NAME.json),
	// relative to Root; "" when there is none.
	Envelope string
	// Bundle is the Sigstore bundle (NAME.sigstore.json), relative to Root; "" when there is none.
	Bundle string
}

// ErrEvidence: the evidence cannot be read at all (no receipt, no root); Verify returns it.
var ErrEvidence = errors.New("evidence cannot be read")

// receiptDirs are the directories receipts live in, relative to the repository root.
var receiptDirs = []string{"qualification/receipts/", ".qualification/receipts/"}

// IsReceiptName reports whether a file name looks like a receipt (a .json file that is not an
// Attestation).
func IsReceiptName(name string) bool {
	return strings.HasSuffix(name, ".json") && !strings.HasSuffix(name, attestfmt.EnvelopeSuffix) && !strings.HasSuffix(name, attestfmt.BundleSuffix)
}

// Locate finds the evidence of a receipt from its path: the root is the directory that holds
// qualification/receipts/ (or .qualification/receipts/) above the receipt, and the attestation
// files are looked for beside it.
func Locate(receiptPath string) (Evidence, error) {
	abs, err := filepath.Abs(receiptPath)
	if err != nil {
		return Evidence{}, fmt.Errorf("%w: %s: %v", ErrEvidence, receiptPath, err)
	}
	slash := filepath.ToSlash(abs)
	best := -1
	for _, d := range receiptDirs {
		if i := strings.LastIndex(slash, "/"+d); i > best {
			best = i
		}
	}
	if best < 0 {
		return Evidence{}, fmt.Errorf("%w: %s is not under qualification/receipts/ or .qualification/receipts/ of a repository; move it below one of them, or name the evidence root with qualverify verify --root DIR", ErrEvidence, receiptPath)
	}
	root := filepath.FromSlash(slash[:best])
	if root == "" {
		root = string(filepath.Separator)
	}
	return LocateIn(root, receiptPath)
}

// LocateIn is Locate with an explicit root directory.
func LocateIn(root, receiptPath string) (Evidence, error) {
	absRoot, err := filepath.Abs(root)
	if err != nil {
		return Evidence{}, fmt.Errorf("%w: %s: %v", ErrEvidence, root, err)
	}
	abs, err := filepath.Abs(receiptPath)
	if err != nil {
		return Evidence{}, fmt.Errorf("%w: %s: %v", ErrEvidence, receiptPath, err)
	}
	rel, err := filepath.Rel(absRoot, abs)
	if err != nil || !filepath.IsLocal(rel) {
		return Evidence{}, fmt.Errorf("%w: %s is not inside %s", ErrEvidence, receiptPath, root)
	}
	if !IsReceiptName(rel) {
		return Evidence{}, fmt.Errorf("%w: %s: a receipt is a .json file (not an attestation)", ErrEvidence, receiptPath)
	}
	ev := Evidence{Root: absRoot, Receipt: filepath.ToSlash(rel)}
	base := strings.TrimSuffix(abs, ".json")
	for _, a := range []struct {
		suffix string
		dst    *string
	}{{attestfmt.EnvelopeSuffix, &ev.Envelope}, {attestfmt.BundleSuffix, &ev.Bundle}} {
		if _, err := os.Lstat(base + a.suffix); err == nil {
			*a.dst = strings.TrimSuffix(ev.Receipt, ".json") + a.suffix
		} else if !errors.Is(err, os.ErrNotExist) {
			return Evidence{}, fmt.Errorf("%w: %s: %v", ErrEvidence, base+a.suffix, err)
		}
	}
	return ev, nil
}

// Subject is one file the verification read, by digest.
type Subject struct {
	// Path is relative to the evidence root.
	Path string
	// Digest is "" for a file refused before it was read (the receipt, when it is a FIFO, a
	// symlink or over its limit).
	Digest string
	// Contract is the schema id found in the file; "" when it carries none.
	Contract string
}
