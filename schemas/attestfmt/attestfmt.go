// Package attestfmt holds the fixed names of qualkit's attestation format, the one place both
// the attest module (which writes attestations) and the verify module (which checks them) read:
// DSSE payload and in-toto statement types, the qualification predicate type, the Sigstore bundle
// media type, the attestation file suffixes and the in-toto link and layout names.
package attestfmt

// Types of the attestation.
const (
	// PredicateType identifies qualkit's qualification predicate, version 1.
	PredicateType = "https://qualkit.dev/attestation/qualification/v1"
	// PayloadType is the DSSE payload type of an in-toto Statement.
	PayloadType = "application/vnd.in-toto+json"
	// StatementType is the in-toto Statement version written and accepted (the `_type` field).
	StatementType = "https://in-toto.io/Statement/v1"
	// BundleMediaType is the Sigstore bundle version written and accepted (v0.3).
	BundleMediaType = "application/vnd.dev.sigstore.bundle.v0.3+json"
)

// File name suffixes of the attestation files: for a receipt DIR/NAME.json, DIR/NAME.intoto.dsse.json
// and DIR/NAME.sigstore.json.
const (
	EnvelopeSuffix = ".intoto.dsse.json"
	BundleSuffix   = ".sigstore.json"
)

// In-toto link and layout names.
const (
	// StepName is the in-toto step a campaign is: its link is StepName.KEYID8.link.
	StepName = "qualkit-campaign"
	// LinkSuffix ends a link file's name.
	LinkSuffix = ".link"
	// InspectionName is the layout's inspection that runs qualverify verify.
	InspectionName = "qualverify"
	// LinkDirSuffix replaces the receipt's ".json": DIR/NAME.in-toto/ holds the campaign's link,
	// a directory in-toto verifiers read as is (their link directory).
	LinkDirSuffix = ".in-toto"
	// Layout parameters (substituted by in-toto verifiers, `-P NAME=VALUE` on the stock CLI).
	ParamReceipt  = "RECEIPT"  // the receipt's path relative to the repository root
	ParamEvidence = "EVIDENCE" // the campaign's run directory (holding every evidence file)
	ParamPubKey   = "PUBKEY"   // a file holding the functionary's public key, for qualverify --key
)
