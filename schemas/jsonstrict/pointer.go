package jsonstrict

import "strings"

var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

// EscapePointerToken escapes one reference token of an RFC 6901 JSON pointer.
func EscapePointerToken(t string) string { return pointerEscaper.Replace(t) }
