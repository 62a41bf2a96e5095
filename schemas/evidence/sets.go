package evidence

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/jsonstrict"
)

// The set digests a row records (docs/metrics.md, "Output and prompt sets"): the runner computes
// them, verify recomputes them, with these two functions.

// OutputSetDigest is a row's output set hash: the sha256 digest of the RFC 8785 canonical JSON
// array of the measured requests' output digests in index order. Digests are "sha256:<hex>", so
// the canonical array is written directly. ok is false when a digest is empty (a measured request
// failed or has no output digest: the row has no output set).
func OutputSetDigest(digests []string) (d string, ok bool) {
	var b strings.Builder
	b.WriteByte('[')
	for i, s := range digests {
		if s == "" || !isDigestText(s) {
			return "", false
		}
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('"')
		b.WriteString(s)
		b.WriteByte('"')
	}
	b.WriteByte(']')
	return DigestOf([]byte(b.String())), true
}

// isDigestText reports whether s needs no JSON escaping as written: a digest's characters.
func isDigestText(s string) bool {
	for _, c := range []byte(s) {
		if c < 0x20 || c == '"' || c == '\\' || c >= 0x80 {
			return false
		}
	}
	return true
}

// PromptSetDigest is the prompt set hash: the sha256 digest of the RFC 8785 canonical JSON array
// of the prompts in measured order, each {"id","text"} plus "system" when it has one. It fails
// only on text that is not UTF-8.
func PromptSetDigest(prompts []contract.Prompt) (string, error) {
	if prompts == nil {
		prompts = []contract.Prompt{}
	}
	for i, p := range prompts {
		if !utf8.ValidString(p.ID) || !utf8.ValidString(p.Text) || !utf8.ValidString(p.System) {
			return "", fmt.Errorf("prompt %d is not UTF-8", i)
		}
	}
	b, err := jsonstrict.Canonical(prompts)
	if err != nil {
		return "", err
	}
	return DigestOf(b), nil
}
