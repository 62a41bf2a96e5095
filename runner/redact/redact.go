// Package redact scrubs the values of secrets from bytes qualrun writes or prints: every value is
// replaced by a marker that names its variable ("[redacted:HF_TOKEN]"), in plain form and in the
// form encoding/json gives it inside a string. A streaming Writer scrubs output as it is captured
// (the server log), matching values split across writes.
package redact

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
)

// MinSecretBytes is the shortest value qualrun accepts as a secret. A shorter value would be
// replaced wherever its bytes happen to occur (in numbers, words, digests), mangling evidence
// without protecting anything, so preflight refuses it.
const MinSecretBytes = 8

// Marker is the text that replaces a value of the variable name.
func Marker(name string) string { return "[redacted:" + name + "]" }

// Secret is one variable whose value must never enter evidence.
type Secret struct {
	// Name is the variable's name (it appears in the marker; never the value).
	Name  string
	Value string
}

// ErrTooShort is wrapped by Check for a value shorter than MinSecretBytes.
var ErrTooShort = fmt.Errorf("shorter than %d bytes", MinSecretBytes)

// Check refuses a non-empty value shorter than MinSecretBytes (an empty value has nothing to leak).
func Check(s Secret) error {
	if s.Value != "" && len(s.Value) < MinSecretBytes {
		return fmt.Errorf("the value of %s is %d bytes, %w: a value that short cannot be scrubbed from evidence without mangling it; use a real secret (a random key of at least %d bytes)", s.Name, len(s.Value), ErrTooShort, MinSecretBytes)
	}
	return nil
}

// form is one byte sequence to replace and its replacement.
type form struct {
	find []byte
	with []byte
	name string
}

// Redactor replaces secret values. A nil or empty Redactor changes nothing.
type Redactor struct {
	secrets []Secret
	forms   []form // longest first
	maxLen  int
	repl    *strings.Replacer
}

// New builds a redactor for secrets; empty values are skipped, and a value shared by several
// names is marked with the first name in sorted order.
func New(secrets ...Secret) *Redactor {
	r := &Redactor{}
	byValue := map[string]string{}
	for _, s := range secrets {
		if s.Value == "" {
			continue
		}
		if n, ok := byValue[s.Value]; !ok || s.Name < n {
			byValue[s.Value] = s.Name
		}
	}
	for v, n := range byValue {
		r.secrets = append(r.secrets, Secret{Name: n, Value: v})
		mark := []byte(Marker(n))
		r.forms = append(r.forms, form{find: []byte(v), with: mark, name: n})
		if j := jsonForm(v); j != v {
			r.forms = append(r.forms, form{find: []byte(j), with: mark, name: n})
		}
	}
	sort.Slice(r.secrets, func(i, j int) bool { return r.secrets[i].Name < r.secrets[j].Name })
	sort.Slice(r.forms, func(i, j int) bool {
		if len(r.forms[i].find) != len(r.forms[j].find) {
			return len(r.forms[i].find) > len(r.forms[j].find)
		}
		return bytes.Compare(r.forms[i].find, r.forms[j].find) < 0
	})
	var pairs []string
	for _, f := range r.forms {
		pairs = append(pairs, string(f.find), string(f.with))
		r.maxLen = max(r.maxLen, len(f.find))
	}
	r.repl = strings.NewReplacer(pairs...)
	return r
}

// jsonForm is v as encoding/json writes it inside a string (HTML characters escaped).
func jsonForm(v string) string {
	b, _ := json.Marshal(v)
	return string(b[1 : len(b)-1])
}

// Empty reports whether there is nothing to scrub.
func (r *Redactor) Empty() bool { return r == nil || len(r.forms) == 0 }

// Secrets are the secrets scrubbed, sorted by name.
func (r *Redactor) Secrets() []Secret {
	if r == nil {
		return nil
	}
	return r.secrets
}

// String returns s with every secret value replaced by its marker.
func (r *Redactor) String(s string) string {
	if r.Empty() {
		return s
	}
	return r.repl.Replace(s)
}

// Bytes returns b with every secret value replaced by its marker (b itself when nothing matches).
func (r *Redactor) Bytes(b []byte) []byte {
	if r.Empty() || r.index(b) < 0 {
		return b
	}
	return []byte(r.repl.Replace(string(b)))
}

// Contains lists the names of the secrets whose values (in any form) occur in b.
func (r *Redactor) Contains(b []byte) []string {
	if r.Empty() {
		return nil
	}
	seen := map[string]bool{}
	var names []string
	for _, f := range r.forms {
		if !seen[f.name] && bytes.Contains(b, f.find) {
			seen[f.name] = true
			names = append(names, f.name)
		}
	}
	sort.Strings(names)
	return names
}

// MaxLen is the length of the longest form searched for (0 when empty).
func (r *Redactor) MaxLen() int {
	if r == nil {
		return 0
	}
	return r.maxLen
}

// index is the offset of the first secret form in b, or -1.
func (r *Redactor) index(b []byte) int {
	first := -1
	for _, f := range r.forms {
		if i := bytes.Index(b, f.find); i >= 0 && (first < 0 || i < first) {
			first = i
		}
	}
	return first
}

// match returns the earliest, then longest, form occurring in b and its offset.
func (r *Redactor) match(b []byte) (int, *form) {
	at, best := -1, (*form)(nil)
	for i := range r.forms {
		f := &r.forms[i]
		if j := bytes.Index(b, f.find); j >= 0 && (at < 0 || j < at || (j == at && len(f.find) > len(best.find))) {
			at, best = j, f
		}
	}
	return at, best
}

// longerMayFollow reports whether a form longer than n bytes starts with all of tail, so that
// more input could still make it the match at this position.
func (r *Redactor) longerMayFollow(tail []byte, n int) bool {
	for _, f := range r.forms {
		if len(f.find) > n && len(f.find) > len(tail) && bytes.HasPrefix(f.find, tail) {
			return true
		}
	}
	return false
}

// Writer scrubs a stream: it holds back the last MaxLen()-1 bytes it was given until more
// arrive or Close, so a value split across writes is still replaced. Safe for concurrent use.
type Writer struct {
	mu      sync.Mutex
	r       *Redactor
	w       io.Writer
	pending []byte
	err     error
	// Replaced counts the values replaced so far, by name.
	replaced map[string]int
}

// NewWriter scrubs what is written to it with r and passes it on to w.
func NewWriter(r *Redactor, w io.Writer) *Writer {
	return &Writer{r: r, w: w, replaced: map[string]int{}}
}

// Write scrubs p; it reports len(p) unless the underlying writer failed.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return 0, w.err
	}
	if w.r.Empty() {
		_, w.err = w.w.Write(p)
		if w.err != nil {
			return 0, w.err
		}
		return len(p), nil
	}
	w.pending = append(w.pending, p...)
	w.emit(false)
	if w.err != nil {
		return 0, w.err
	}
	return len(p), nil
}

// emit writes out what can no longer be the start of a secret (all of it when final).
func (w *Writer) emit(final bool) {
	var out []byte
	for {
		at, f := w.r.match(w.pending)
		if f == nil || (!final && w.r.longerMayFollow(w.pending[at:], len(f.find))) {
			break
		}
		out = append(out, w.pending[:at]...)
		out = append(out, f.with...)
		w.replaced[f.name]++
		w.pending = w.pending[at+len(f.find):]
	}
	keep := w.r.maxLen - 1
	if final {
		keep = 0
	}
	if len(w.pending) > keep {
		n := len(w.pending) - keep
		out = append(out, w.pending[:n]...)
		w.pending = append(w.pending[:0], w.pending[n:]...)
	}
	if len(out) > 0 {
		_, w.err = w.w.Write(out)
	}
}

// Close writes out what is held back; it does not close the underlying writer.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil && len(w.pending) > 0 {
		w.emit(true)
	}
	return w.err
}

// Replaced reports how many values of each variable were replaced so far.
func (w *Writer) Replaced() map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string]int, len(w.replaced))
	for k, v := range w.replaced {
		out[k] = v
	}
	return out
}
