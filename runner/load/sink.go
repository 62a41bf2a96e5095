package load

import (
	"github.com/qualkit/qualkit/schemas/contract"
)

// WithRecordSink makes Run hand every request record to sink the moment the request ends (in
// completion order, from the goroutine that ran it, so sink must be safe for concurrent use and
// must not block for long), before the row is complete: a caller can write each record to disk
// as the row runs, so that an interruption or a crash loses nothing that was measured. The
// records Run returns are the same; sink must not modify them.
func WithRecordSink(sink func(*contract.RequestRecordDoc)) Option {
	return func(o *options) { o.sink = sink }
}

// recordSink receives each request record as its request ends (WithRecordSink).
type recordSink = func(*contract.RequestRecordDoc)
