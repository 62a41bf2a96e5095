package record

import "github.com/qualkit/qualkit/schemas/contract"

// assertionKindValues are the assertion outcome kinds in contract order: Record.Assertions holds
// each kind as its index here.
var assertionKindValues = contract.AssertionOutcomeKindValues()

// maxKindBytes is how many assertion kinds the fast path holds in place; a record with more goes
// to the strict decoder (none does: the contract allows at most as many, TestAssertionKindsFitFastPath).
const maxKindBytes = 64

// assertionKindIndex is the index of the kind k names in assertionKindValues, without allocating
// (-1 for none).
func assertionKindIndex(k []byte) int {
	for j, v := range assertionKindValues {
		if string(k) == string(v) {
			return j
		}
	}
	return -1
}

// AssertionKinds encodes assertion kinds as Record.Assertions holds them: one byte each, the
// kind's index in contract.AssertionOutcomeKindValues (255 for another).
func AssertionKinds(kinds []contract.AssertionOutcomeKind) string {
	if len(kinds) == 0 {
		return ""
	}
	b := make([]byte, len(kinds))
	for i, k := range kinds {
		b[i] = 255
		for j, v := range assertionKindValues {
			if k == v {
				b[i] = byte(j)
			}
		}
	}
	return string(b)
}
