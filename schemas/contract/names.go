package contract

import "strings"

// DriverResults lists the version-2 evidence results a driver writes, by contract name.
var DriverResults = []string{NextTokenResult, PathAttribution, LayerAttribution}

// IsDriverResult reports whether name (a contract name such as "next-token-result.v2", or a
// schema id such as "qualkit.next-token-result.v2") is a driver's evidence result.
func IsDriverResult(name string) bool {
	name = strings.TrimPrefix(name, "qualkit.")
	for _, n := range DriverResults {
		if n == name {
			return true
		}
	}
	return false
}
