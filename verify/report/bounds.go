package report

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Bounds of the report view contract (qualkit.report-view.v1) on what a view carries beyond the
// evidence's own contracts: text that verify composes, and lists whose length the evidence does
// not bound. Longer text is cut, marking the cut; longer lists keep their first entries and say
// how many were left out.
const (
	// MaxReceipts is the most receipts one view shows.
	MaxReceipts = 1000
	// maxPath bounds a path as given to qualverify, or named by a finding.
	maxPath = 4096
	// maxProse bounds free text: notes, messages, warnings, errors, reasons.
	maxProse = 8192
	// maxPointer bounds a finding's JSON pointer.
	maxPointer = 8192
	// maxMismatch bounds a row's mismatch line, maxDriverMismatch a driver section's.
	maxMismatch       = 512
	maxDriverMismatch = 1024
	// maxSLO bounds the SLO line of a case.
	maxSLO = 256
	// maxEntries bounds the warnings of a verification and the differences, rows, rules and
	// warnings of a comparison.
	maxEntries = 100000
)

// clip bounds s to n runes, marking a cut with an ellipsis.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// message is non-empty free text within the contract's bound.
func message(s string) string {
	if s == "" {
		return "-"
	}
	return clip(s, maxProse)
}

// nonEmpty returns s, or alt when s is empty.
func nonEmpty(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}

// pointerWithin bounds a JSON pointer to n runes by cutting it at a token boundary: the result
// points at an ancestor of the original location.
func pointerWithin(p string, n int) string {
	for utf8.RuneCountInString(p) > n {
		i := strings.LastIndexByte(p, '/')
		if i < 0 {
			return ""
		}
		p = p[:i]
	}
	return p
}

// messages bounds a list of free text to maxEntries entries (the last one then says how many
// were left out), each non-empty and within maxProse.
func messages(in []string) []string {
	out := make([]string, 0, min(len(in), maxEntries))
	for i, s := range in {
		if i == maxEntries-1 && len(in) > maxEntries {
			out = append(out, fmt.Sprintf("… and %d more", len(in)-i))
			break
		}
		out = append(out, message(s))
	}
	return out
}

// firstN keeps at most n entries of a list, and reports how many it left out.
func firstN[T any](s []T, n int) ([]T, int) {
	if len(s) <= n {
		return s, 0
	}
	return s[:n], len(s) - n
}
