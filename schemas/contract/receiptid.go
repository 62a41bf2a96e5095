package contract

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"
)

// ReceiptIDFor names a receipt: the UTC start to the microsecond, backend, host id (32 chars at
// most), workload id (24 at most), the first 10 hex digits of sha256("<workload id>\x00<variant>")
// and the receipt major version. Sorting receipt ids sorts runs by start time. qualrun names its
// receipts with it; qualverify recomputes it from the receipt's started_at, backend, host id,
// workload id and variant, so an id that was changed after the run is found.
func ReceiptIDFor(start time.Time, backend, hostID, workloadID, variant string) string {
	h := sha256.Sum256([]byte(workloadID + "\x00" + variant))
	ts := strings.ToLower(start.UTC().Format("20060102T150405.000000Z"))
	ts = strings.Replace(ts, ".", "", 1)
	return fmt.Sprintf("%s-%s-%s-%s-%s-v1", ts, backend, truncID(hostID, 32), truncID(workloadID, 24), hex.EncodeToString(h[:])[:10])
}

func truncID(s string, n int) string {
	if len(s) > n {
		return strings.TrimRight(s[:n], "-._")
	}
	return s
}
