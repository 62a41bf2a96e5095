package schemas

import (
	"testing"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/trace"
)

// TestMaxParentsIsTheContracts: a trace entry waits for at most trace.MaxParents entries, and a
// request record's trace_entry.parents lists at most as many (the CUE contract's bound, which
// the verifier's record reader takes from the exported schema); the two stay one number.
func TestMaxParentsIsTheContracts(t *testing.T) {
	if got := MustBoundsOf(contract.RequestRecord).IntLimit("trace_entry.parents", "maxItems"); got != trace.MaxParents {
		t.Fatalf("request-record trace_entry.parents maxItems %d, trace.MaxParents %d: change both", got, trace.MaxParents)
	}
}
