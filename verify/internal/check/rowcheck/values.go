package rowcheck

func Deref(s *string) string {
	if s == nil {
		return "none" // not a contract value: the text of an absent value
	}
	return *s
}

func EqualInt(a, b *int64) bool { return (a == nil && b == nil) || (a != nil && b != nil && *a == *b) }

func CmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
