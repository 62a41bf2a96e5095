// Package safetext makes text that came from input safe to print on a terminal: every control
// character and every Unicode bidirectional override, isolate and mark is written as a visible
// escape, so a signed device name, a model id or a pulled layer title cannot move the cursor,
// clear the screen, set a window title, rewrite a line or reorder what the reader sees.
//
// It is the one definition qualrun, qualverify and the text report share (docs/verification.md,
// "Text from input"). JSON output never goes through it: JSON stays byte-exact.
package safetext
