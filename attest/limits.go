package attest

// Limits on the files this package reads. They are generous for real evidence and keys and small
// enough that a wrong path cannot make qualrun read a model file into memory.
const (
	// MaxReceiptBytes caps the receipt read by Statement (the schemas module's document cap).
	MaxReceiptBytes = 64 << 20
	// MaxKeyFileBytes caps a private key file read by LoadSigner.
	MaxKeyFileBytes = 64 << 10
	// MaxPasswordFileBytes caps a password file read by PasswordFromEnv.
	MaxPasswordFileBytes = 4 << 10
	// MaxSubjects caps the subjects of one Statement: sigstore-go (and so cosign v3 with --bundle)
	// refuses statements with more than 1024 subjects.
	MaxSubjects = 1024
)
