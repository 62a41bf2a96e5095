package fleetpage

import (
	"fmt"
	"html/template"
	"io"
	"math"
	"slices"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/metric"
	"github.com/qualkit/qualkit/verify"
	"github.com/qualkit/qualkit/verify/report/internal/format"
)

// MaxHosts bounds the hosts the fleet page lists: every outlier host, then hosts in row
// order up to this many; the page says how many more there are.
const MaxHosts = 500

// Page is what the fleet page shows: a checked fleet manifest, and each passed row's values.
type Page struct {
	Manifest *contract.FleetManifestDoc
	// Signer is the fingerprint of the key that signed the manifest.
	Signer string
	// Metrics are the columns (the manifest's metrics, in its order).
	Metrics []contract.FleetManifestMetricStats
	// Hosts are the table's rows: outlier hosts first (most outlier metrics first), then the
	// other passed rows in row order.
	Hosts []HostRow
	// Omitted counts the passed rows not listed (beyond MaxHosts).
	Omitted int
	// Problems are the entries that are not passed.
	Problems []contract.FleetManifestEntry
}

// HostRow is one passed row of the heat table.
type HostRow struct {
	Host    string
	Row     int64
	Outlier bool
	Cells   []Cell
}

// Cell is one value; Heat is -3..3, the robust score bucketed and signed so that positive is
// worse for the metric's direction; Absent marks a metric the host did not report.
type Cell struct {
	Value   float64
	Heat    int
	Outlier bool
	Absent  bool
}

// Build lays out the page of a manifest that CheckFleetManifest found to hold, with the
// values of the receipts it was checked against (matched to passed rows by digest).
func Build(m *contract.FleetManifestDoc, signer string, receipts []verify.FleetReceipt) *Page {
	p := &Page{Manifest: m, Signer: signer, Metrics: m.Metrics}
	byDigest := map[string]*verify.FleetReceipt{}
	for i := range receipts {
		byDigest[receipts[i].Digest] = &receipts[i]
	}
	outliers := map[string]int{}
	for i, h := range m.OutlierHosts {
		outliers[h.Host] = i
	}
	var rows []HostRow
	for _, e := range m.Entries {
		if e.Status != contract.FleetManifestStatusPassed {
			p.Problems = append(p.Problems, e)
			continue
		}
		r := byDigest[e.Receipt.Digest]
		vals := map[string]float64{}
		if r != nil && r.Doc != nil {
			for _, v := range r.Doc.Metrics {
				vals[v.Name] = v.Value
			}
		}
		hr := HostRow{Host: e.Host, Row: *e.Row}
		_, hr.Outlier = outliers[e.Host]
		for _, s := range m.Metrics {
			x, ok := vals[s.Name]
			if !ok {
				hr.Cells = append(hr.Cells, Cell{Absent: true})
				continue
			}
			c := Cell{Value: x, Outlier: metric.IsOutlier(x, s.Median, s.Mad, m.OutlierRule.K)}
			if score, ok := metric.OutlierScore(x, s.Median, s.Mad); ok {
				worse := (x > s.Median) == (s.Direction == contract.MetricStatsDirectionLowerIsBetter)
				b := int(math.Min(3, math.Ceil(score/m.OutlierRule.K*3)))
				if x == s.Median {
					b = 0
				}
				if !worse {
					b = -b
				}
				c.Heat = b
			}
			hr.Cells = append(hr.Cells, c)
		}
		rows = append(rows, hr)
	}
	slices.SortStableFunc(rows, func(a, b HostRow) int {
		ia, oa := outliers[a.Host]
		ib, ob := outliers[b.Host]
		switch {
		case oa && ob:
			return ia - ib
		case oa:
			return -1
		case ob:
			return 1
		}
		return 0
	})
	if len(rows) > MaxHosts {
		keep := max(MaxHosts, len(m.OutlierHosts))
		if keep < len(rows) {
			p.Omitted = len(rows) - keep
			rows = rows[:keep]
		}
	}
	p.Hosts = rows
	return p
}

// fleetCSS is the page's one stylesheet (allowed by hash, like the receipt page's).
const fleetCSS = `body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}
table{border-collapse:collapse;margin:1em 0}th,td{border:1px solid #ccc;padding:2px 6px;text-align:right;white-space:nowrap}
th{background:#f4f4f4}td.h{text-align:left}.o{font-weight:bold;outline:2px solid #000}
.hm3{background:#2166ac;color:#fff}.hm2{background:#67a9cf}.hm1{background:#d1e5f0}.h0{background:#fff}
.h1{background:#fddbc7}.h2{background:#ef8a62}.h3{background:#b2182b;color:#fff}.absent{color:#999}
.bad{color:#b2182b}code{font-size:12px}`

var fleetCSP = "default-src 'none'; style-src " + format.CSPHash(fleetCSS) + "; img-src 'none'; script-src 'none'; base-uri 'none'; form-action 'none'"

var fleetTemplate = template.Must(template.New("fleet").Funcs(template.FuncMap{
	"num": func(v float64) string { return format.Num(v) },
	"heat": func(c Cell) string {
		if c.Heat < 0 {
			return fmt.Sprintf("hm%d", -c.Heat)
		}
		return fmt.Sprintf("h%d", c.Heat)
	},
	"row": func(r *int64) string {
		if r == nil {
			return "-"
		}
		return fmt.Sprint(*r)
	},
}).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{{.CSP}}">
<title>fleet {{.P.Manifest.Plan.ID}}</title><style>{{.CSS}}</style></head><body>
<h1>Fleet {{.P.Manifest.Plan.ID}}</h1>
<p>Plan <code>{{.P.Manifest.Plan.Digest}}</code> at commit <code>{{.P.Manifest.Plan.Commit}}</code>, {{.P.Manifest.Plan.Rows}} rows:
{{.P.Manifest.Counts.Passed}} passed, <span class="bad">{{.P.Manifest.Counts.Failed}} failed, {{.P.Manifest.Counts.Missing}} missing</span>,
{{.P.Manifest.Counts.NotBelonging}} receipts not belonging. The manifest's signature (key <code>{{.P.Signer}}</code>) and every derived
member were checked against the plan and the receipts before this page was drawn.</p>
<p>Outlier rule: a value is an outlier when |x &minus; median| &gt; {{.P.Manifest.OutlierRule.K}} &times; {{.P.Manifest.OutlierRule.Scale}} &times; MAD
(none is named when MAD is 0). Colours: the robust score signed by the metric's direction, red worse, blue better; outlined: outliers.</p>
<h2>Hosts &times; metrics (outlier hosts first)</h2>
<table><tr><th>host</th><th>row</th>{{range .P.Metrics}}<th title="{{.Direction}}">{{.Name}}<br>{{.Unit}}</th>{{end}}</tr>
<tr><th>median</th><th></th>{{range .P.Metrics}}<th>{{num .Median}}</th>{{end}}</tr>
<tr><th>MAD</th><th></th>{{range .P.Metrics}}<th>{{num .Mad}}</th>{{end}}</tr>
{{range .P.Hosts}}<tr><td class="h">{{if .Outlier}}<b>{{.Host}}</b>{{else}}{{.Host}}{{end}}</td><td>{{.Row}}</td>{{range .Cells}}{{if .Absent}}<td class="absent">&ndash;</td>{{else}}<td class="{{heat .}}{{if .Outlier}} o{{end}}">{{num .Value}}</td>{{end}}{{end}}</tr>
{{end}}</table>
{{if .P.Omitted}}<p>{{.P.Omitted}} more passed hosts, all within the rule, are not listed.</p>{{end}}
<h2>Rows that did not pass, receipts that do not belong</h2>
{{if .P.Problems}}<table><tr><th>row</th><th>status</th><th>host</th><th>receipt</th><th>why</th></tr>
{{range .P.Problems}}<tr><td>{{row .Row}}</td><td class="h bad">{{.Status}}</td><td class="h">{{.Host}}</td><td class="h">{{if .Receipt}}<code>{{.Receipt.Digest}}</code>{{end}}</td><td class="h">{{.Why}}</td></tr>
{{end}}</table>{{else}}<p>None.</p>{{end}}
</body></html>
`))

// WriteHTML writes the page: one self-contained HTML file (inline CSS allowed by hash,
// no script, nothing fetched).
func WriteHTML(w io.Writer, p *Page) error {
	return fleetTemplate.Execute(w, map[string]any{"P": p, "CSS": template.CSS(fleetCSS), "CSP": fleetCSP})
}
