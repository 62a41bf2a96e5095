package report

import (
	"io"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/verify"
	"github.com/qualkit/qualkit/verify/report/internal/fleetpage"
)

// The fleet page (package internal/fleetpage) shows a checked fleet manifest.
type (
	// FleetPage is what the fleet page shows: a checked fleet manifest, and each passed row's values.
	FleetPage = fleetpage.Page
	// FleetHostRow is one passed row of the heat table.
	FleetHostRow = fleetpage.HostRow
	// FleetCell is one value of the heat table.
	FleetCell = fleetpage.Cell
)

// MaxFleetPageHosts bounds the hosts the fleet page lists: every outlier host, then hosts in row
// order up to this many; the page says how many more there are.
const MaxFleetPageHosts = fleetpage.MaxHosts

// BuildFleetPage lays out the page of a manifest that CheckFleetManifest found to hold, with the
// values of the receipts it was checked against (matched to passed rows by digest).
func BuildFleetPage(m *contract.FleetManifestDoc, signer string, receipts []verify.FleetReceipt) *FleetPage {
	return fleetpage.Build(m, signer, receipts)
}

// WriteFleetHTML writes the fleet page: one self-contained HTML file (inline CSS allowed by hash,
// no script, nothing fetched).
func WriteFleetHTML(w io.Writer, p *FleetPage) error { return fleetpage.WriteHTML(w, p) }
