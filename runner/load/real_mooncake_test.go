package load

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"testing"
)

// realMooncakeDigest is the sha256 of kvcache-ai/Mooncake's FAST25-release/traces/
// conversation_trace.jsonl (git blob 5a371794b81d7fc7487ec8a02a2c631bcc7fbdf8, 3,029,533 bytes).
const realMooncakeDigest = "b8cbb061a85206d729d91cdc2981f43c9e0d99209dce588d3af5f7934408b9df"

// TestRealMooncakeConversationTrace reads the real Mooncake conversation trace when
// QUALKIT_MOONCAKE_CONVERSATION names a copy (it is not in the repository: docs/performance.md
// says how to get it): the copy must be that file, by digest, and ImportMooncake must read its
// 12,031 requests over 3,536,999 ms, bursts up to 28 at one timestamp, inputs up to 126,195
// tokens in 512-token hash blocks, 12,030 sharing their first block with an earlier request: the
// statistics mooncakeLike imitates.
func TestRealMooncakeConversationTrace(t *testing.T) {
	path := os.Getenv("QUALKIT_MOONCAKE_CONVERSATION")
	if path == "" {
		t.Skip("set QUALKIT_MOONCAKE_CONVERSATION to a copy of Mooncake's FAST25-release/traces/conversation_trace.jsonl")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != realMooncakeDigest {
		t.Fatalf("%s has digest %x, not the Mooncake conversation trace's %s", path, sum, realMooncakeDigest)
	}
	es, err := ImportMooncake(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	maxBurst, maxIn, shared := mooncakeStats(t, es)
	if len(es) != 12031 || es[len(es)-1].TimestampMs != 3536999 || maxBurst != 28 || maxIn != 126195 || shared != 12030 {
		t.Fatalf("%d requests over %d ms, bursts up to %d, inputs up to %d, %d share a first block", len(es), es[len(es)-1].TimestampMs, maxBurst, maxIn, shared)
	}
}
