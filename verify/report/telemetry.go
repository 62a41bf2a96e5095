package report

import (
	"html/template"

	"github.com/qualkit/qualkit/verify/report/internal/figure"
)

// Telemetry draws Receipts[receipt].Cases[kase].Rows[row]'s device telemetry (power and SM clock
// against time), or nothing when the row has none.
func (p pageData) Telemetry(receipt, kase, row int) template.HTML {
	xs := p.telemetry[distKey{receipt, kase, row, ""}]
	if len(xs) == 0 {
		return ""
	}
	return template.HTML(`<div class="pair">` + figure.Telemetry(xs) + `</div>`)
}
