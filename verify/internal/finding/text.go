package finding

import "unicode/utf8"

// NonEmpty is s, or alt when s is empty.
func NonEmpty(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}

// ClipRunes bounds a string to n runes (the contract's limits), marking the cut.
func ClipRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}
