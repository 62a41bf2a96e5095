package verify

import (
	"github.com/qualkit/qualkit/verify/internal/check"
	"github.com/qualkit/qualkit/verify/internal/load"
)

// PredicateFields are the members of the qualification predicate, each equal to the receipt's.
var PredicateFields = load.PredicateFields

// SignatureOutcome is what one signature of an attestation came to.
type SignatureOutcome = load.SignatureOutcome

// Evidence names one receipt and where its evidence lives. Every path in a receipt (artifacts,
// case results, request records, the lifecycle record) and every attestation subject is relative
// to Root, the root of the repository the campaign ran in (or a copy of its receipts and
// .qualification/runs/ directories).
type Evidence = load.Evidence

// ErrEvidence: the evidence cannot be read at all (no receipt, no root); Verify returns it.
var ErrEvidence = load.ErrEvidence

// IsReceiptName reports whether a file name looks like a receipt (a .json file that is not an
// attestation).
func IsReceiptName(name string) bool { return load.IsReceiptName(name) }

// Locate finds the evidence of a receipt from its path: the root is the directory that holds
// qualification/receipts/ (or .qualification/receipts/) above the receipt, and the attestation
// files are looked for beside it.
func Locate(receiptPath string) (Evidence, error) { return load.Locate(receiptPath) }

// LocateIn is Locate with an explicit root directory.
func LocateIn(root string, receiptPath string) (Evidence, error) {
	return load.LocateIn(root, receiptPath)
}

// Subject is one file the verification read, by digest.
type Subject = load.Subject

// TreeHashFormat is the source tree hash format receipts carry.
const TreeHashFormat = check.TreeHashFormat
