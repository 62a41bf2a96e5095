package contract

// Strings converts a list of enum values (or any strings) to plain strings.
func Strings[S ~string](s []S) []string {
	if s == nil {
		return nil
	}
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = string(v)
	}
	return out
}

// Enums converts plain strings to an enum type's values, unchecked (Valid checks one).
func Enums[S ~string](s []string) []S {
	if s == nil {
		return nil
	}
	out := make([]S, len(s))
	for i, v := range s {
		out[i] = S(v)
	}
	return out
}
