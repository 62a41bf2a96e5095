package record

import "testing"

// TestAssertionKindsFitFastPath: the fast path holds as many assertion kinds as the contract
// allows, so it declines no valid record for its assertions' count.
func TestAssertionKindsFitFastPath(t *testing.T) {
	if recordLimits.assertionsMax > maxKindBytes {
		t.Fatalf("the contract allows %d assertions, the fast path holds %d", recordLimits.assertionsMax, maxKindBytes)
	}
	if len(assertionKindValues) >= 255 {
		t.Fatalf("%d assertion kinds: 255 marks another", len(assertionKindValues))
	}
}
