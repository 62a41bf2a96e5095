package tokenize

import (
	"strings"
	"unicode/utf8"
)

// maxPieceScan bounds how far Separable looks for the piece next to the join: a longer piece
// answers false.
const maxPieceScan = 4 << 10

// Separable reports whether TextTokens(prefix+suffix) is TextTokens(prefix) +
// TextTokens(suffix) by the vocabulary's construction, looking only at the text near the join
// (at most a few KiB): so a text grown block by block (issue 28, token-exact synthesis) is
// counted once, each block alone, where the joins are separable. False means not known: count
// the whole text. For a lines prompt (PromptTokens), the text counted is the rendered prompt with
// its space prefix, plus BOS.
//
// It is true when the text is merged piece by piece (merger.pieces), suffix starts with a space
// (or "▁") that follows another character, so that no merge crosses the join; no special token
// occurs across the join, so the special tokens of each side are taken alone; and no special
// token ends in prefix's last piece or starts in suffix's first one (nor is either side one
// piece), so that neither side's text next to the join can be a whole fragment that is a token
// (counted as that token alone, but merged when joined).
func (t *Tokenizer) Separable(prefix, suffix string) bool {
	if !t.merge.pieces || prefix == "" || suffix == "" || !isSpace(suffix) {
		return false
	}
	if r, _ := utf8.DecodeLastRuneInString(prefix); r == ' ' || r == '▁' {
		return false
	}
	last := lastPiece(prefix)
	first := firstPieceEnd(suffix)
	if last <= 0 || first >= len(suffix) {
		return false
	}
	lo := max(0, last-MaxSpecialTokenBytes)
	hi := min(len(suffix), first+MaxSpecialTokenBytes)
	join := len(prefix) - lo
	lastStart, firstEnd := last-lo, join+first
	ok := true
	t.special.scan(prefix[lo:]+suffix[:hi], func(start, end int) bool {
		switch {
		case start < join && end > join: // across the join
		case end <= join && end >= lastStart: // ends in prefix's last piece
		case start >= join && start <= firstEnd: // starts in suffix's first piece
		default:
			return true
		}
		ok = false
		return false
	})
	return ok
}

// isSpace reports whether s starts with a space or "▁".
func isSpace(s string) bool { return s[0] == ' ' || strings.HasPrefix(s, spaceSep) }

// lastPiece is where the last piece of s starts (the last space or "▁" that follows another
// character), -1 if s is one piece or the piece is longer than maxPieceScan.
func lastPiece(s string) int {
	for i := len(s) - 1; i > 0 && len(s)-i <= maxPieceScan; i-- {
		if !isSpace(s[i:]) {
			continue
		}
		if r, _ := utf8.DecodeLastRuneInString(s[:i]); r != ' ' && r != '▁' {
			return i
		}
	}
	return -1
}

// firstPieceEnd is where the first piece of s ends (the first space or "▁" after its start that
// follows another character), len(s) if s is one piece or the piece is longer than maxPieceScan.
func firstPieceEnd(s string) int {
	for i := 1; i < len(s) && i <= maxPieceScan; i++ {
		if !isSpace(s[i:]) {
			continue
		}
		if r, _ := utf8.DecodeLastRuneInString(s[:i]); r != ' ' && r != '▁' {
			return i
		}
	}
	return len(s)
}
