package evidence

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/jsonstrict"
)

// The set digests a row records (docs/metrics.md, "Output and prompt sets"): the runner computes
// them, verify recomputes them, with these functions.

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
	ps := NewPromptSetHash()
	for _, p := range prompts {
		if err := ps.Add(p); err != nil {
			return "", err
		}
	}
	return ps.Sum(), nil
}

// PromptSetHash is PromptSetDigest of prompts added one at a time: the canonical JSON array hashed
// element by element, so a generated corpus is never held whole (PromptSetDigest is this over a
// slice).
type PromptSetHash struct {
	h hash.Hash
	n int
}

// NewPromptSetHash starts an empty prompt set.
func NewPromptSetHash() *PromptSetHash {
	h := sha256.New()
	h.Write([]byte{'['})
	return &PromptSetHash{h: h}
}

// Add adds the next prompt; it fails only on text that is not UTF-8.
func (ps *PromptSetHash) Add(p contract.Prompt) error {
	if !utf8.ValidString(p.ID) || !utf8.ValidString(p.Text) || !utf8.ValidString(p.System) {
		return fmt.Errorf("prompt %d is not UTF-8", ps.n)
	}
	if ps.n > 0 {
		ps.h.Write([]byte{','})
	}
	ps.n++
	if plainJSON(p.ID) && plainJSON(p.Text) && plainJSON(p.System) {
		// RFC 8785 writes such strings as they are, and "id" sorts before "system" and "text".
		io.WriteString(ps.h, `{"id":"`+p.ID)
		if p.System != "" {
			io.WriteString(ps.h, `","system":"`+p.System)
		}
		io.WriteString(ps.h, `","text":"`)
		io.WriteString(ps.h, p.Text)
		io.WriteString(ps.h, `"}`)
		return nil
	}
	b, err := jsonstrict.Canonical(p)
	if err != nil {
		return fmt.Errorf("prompt %d: %w", ps.n-1, err)
	}
	ps.h.Write(b)
	return nil
}

// Sum is the digest of the prompts added; the set takes no prompt after it.
func (ps *PromptSetHash) Sum() string {
	ps.h.Write([]byte{']'})
	return "sha256:" + hex.EncodeToString(ps.h.Sum(nil))
}

// plainJSON reports whether s is printable ASCII without '"' or '\\', which a canonical JSON
// string holds unescaped.
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}
