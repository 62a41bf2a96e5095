// Package fleet is qualverify's view of a fleet: the fleet plan, the receipts bound to its rows
// (a row pinned to a node only by a receipt of that host), the fleet manifest built from them
// with its outlier statistics, and the manifest's signature and recomputation check
// (manifest_check.go). Package verify's VerifyFleetReceipts verifies each receipt and re-exports
// the rest.
package fleet

import (
	"cmp"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/qualkit/qualkit/schemas"
	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/evidence"
	"github.com/qualkit/qualkit/schemas/metric"
	"github.com/qualkit/qualkit/verify/internal/finding"
)

// MaxFleetReceipts bounds the receipts one fleet manifest is built from (twice the plan's row
// bound: every row and as many strays).
const MaxFleetReceipts = 20000

// MaxFleetPlanBytes bounds a fleet plan file (10,000 rows of a few hundred bytes).
const MaxFleetPlanBytes = 16 << 20

// FleetPlan is a fleet plan read for checking receipts against it.
type FleetPlan struct {
	Doc *contract.FleetPlanDoc
	// Digest is sha256 of the plan file's bytes.
	Digest string
}

// LoadFleetPlan reads a fleet plan (a regular file, bounded) and checks it fully (schema and
// rules).
func LoadFleetPlan(path string) (*FleetPlan, error) {
	raw, err := evidence.ReadFileLimited(path, MaxFleetPlanBytes)
	if err != nil {
		return nil, fmt.Errorf("read fleet plan: %w", err)
	}
	doc, err := schemas.Decode[contract.FleetPlanDoc](raw, path, contract.FleetPlan)
	if err != nil {
		return nil, fmt.Errorf("fleet plan %s: %w", path, err)
	}
	return &FleetPlan{Doc: doc, Digest: evidence.DigestOf(raw)}, nil
}

// FleetReceipt is one receipt's verification reduced to what a fleet manifest needs, so that
// verifying thousands keeps only this much of each.
type FleetReceipt struct {
	// Path names the receipt as the caller gave it (a path or an oci:// reference).
	Path string
	// Digest is sha256 of the receipt's bytes ("" when it could not be read).
	Digest string
	// Verified: the verification found nothing; Findings counts what it found, First says the first.
	Verified bool
	Findings int
	First    string
	// Err is set when the receipt could not be verified at all.
	Err error
	// Doc holds the receipt members the binding reads; nil when the receipt could not be read.
	Doc *FleetReceiptDoc
}

// FleetReceiptDoc is what binding and statistics read of a receipt.
type FleetReceiptDoc struct {
	ReceiptID      string
	Host           string
	Commit         string
	WorkloadPath   string
	WorkloadDigest string
	Variant        string
	Variables      map[string]any
	Command        []string
	Qualification  contract.QualificationVerdict
	Metrics        []FleetValue
}

// FleetValue is one result metric of a receipt: RESULT-ID/rREPETITION/NAME.
type FleetValue struct {
	Name      string
	Unit      string
	Direction contract.Direction
	Value     float64
}

// fleetOutput matches the --output the fleet job script gives qualrun run:
// qualification/receipts/fleet/PLAN-ID/row-INDEX/HOST-ID.json.
var fleetOutput = regexp.MustCompile(`^qualification/receipts/fleet/([a-z0-9][a-z0-9._-]{2,127})/row-([0-9]{1,4})/([a-z0-9][a-z0-9._-]{1,63})\.json$`)

// Claim is the plan row a receipt's own (signed) qualrun command says it ran.
func Claim(cmd []string) (plan string, row int, host string, ok bool) {
	for i, a := range cmd {
		var v string
		switch {
		case a == "--output" && i+1 < len(cmd):
			v = cmd[i+1]
		case strings.HasPrefix(a, "--output="):
			v = strings.TrimPrefix(a, "--output=")
		default:
			continue
		}
		m := fleetOutput.FindStringSubmatch(v)
		if m == nil {
			return "", 0, "", false
		}
		n, _ := strconv.Atoi(m[2])
		return m[1], n, m[3], true
	}
	return "", 0, "", false
}

// variableText is a resolved workload variable as a plan row spells it (--var NAME=VALUE).
func variableText(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	case json.Number:
		return x.String()
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// BuildFleetManifest binds receipts to the rows of plan and computes the cross-host statistics
// of the passed rows; created and version fill created_at and qualverify. The result depends on
// the receipts, not on their order: a row claimed by several receipts gets the best one
// (verified and passed, then verified, then by digest) and the others are not_belonging; strays
// are sorted by digest, then path.
func BuildFleetManifest(plan *FleetPlan, receipts []FleetReceipt, k float64, created, version string) *contract.FleetManifestDoc {
	p := plan.Doc
	m := &contract.FleetManifestDoc{
		Schema:      contract.FleetManifestSchema,
		Plan:        contract.FleetManifestPlan{ID: p.ID, Digest: plan.Digest, Commit: p.Commit, Rows: int64(len(p.Rows))},
		CreatedAt:   created,
		Qualverify:  version,
		OutlierRule: contract.FleetManifestOutlierRule{Rule: contract.OutlierRuleRule, K: k, Scale: metric.MADScale},
	}
	// The workload digest most receipts of this commit carry, per workload path.
	votes := map[string]map[string]int{}
	for _, r := range receipts {
		if r.Doc != nil && r.Doc.Commit == p.Commit {
			if votes[r.Doc.WorkloadPath] == nil {
				votes[r.Doc.WorkloadPath] = map[string]int{}
			}
			votes[r.Doc.WorkloadPath][r.Doc.WorkloadDigest]++
		}
	}
	majority := map[string]string{}
	for path, vs := range votes {
		best := ""
		for d, n := range vs {
			if best == "" || n > vs[best] || (n == vs[best] && d < best) {
				best = d
			}
		}
		majority[path] = best
	}
	type candidate struct {
		r   *FleetReceipt
		row int
	}
	var strays []contract.FleetManifestEntry
	stray := func(r *FleetReceipt, row *int64, why string) {
		strays = append(strays, entryOf(r, row, contract.FleetManifestStatusNotBelonging, finding.ClipRunes(why, 1500)))
	}
	byRow := map[int][]*FleetReceipt{}
	for i := range receipts {
		r := &receipts[i]
		if r.Doc == nil {
			why := "the receipt could not be read"
			if r.Err != nil {
				why = "the receipt could not be verified: " + r.Err.Error()
			}
			stray(r, nil, why)
			continue
		}
		d := r.Doc
		planID, n, host, ok := Claim(d.Command)
		if !ok {
			stray(r, nil, "its qualrun command names no fleet row (--output qualification/receipts/fleet/PLAN/row-N/HOST.json)")
			continue
		}
		row := int64(n)
		switch {
		case planID != p.ID:
			stray(r, nil, fmt.Sprintf("it ran row %d of plan %s, not of %s", n, planID, p.ID))
			continue
		case n >= len(p.Rows):
			stray(r, nil, fmt.Sprintf("it names row %d; the plan has %d rows", n, len(p.Rows)))
			continue
		case d.Commit != p.Commit:
			stray(r, &row, fmt.Sprintf("commit %s; the plan pins %s", d.Commit, p.Commit))
			continue
		case host != d.Host:
			stray(r, &row, fmt.Sprintf("its output path names host %s but its host id is %s", host, d.Host))
			continue
		}
		pr := p.Rows[n]
		if why := rowMismatch(pr, d); why != "" {
			stray(r, &row, why)
			continue
		}
		if pin := pinnedHost(pr); pin != "" && pin != d.Host {
			stray(r, &row, fmt.Sprintf("row %d is pinned to host %s; the receipt's host is %s", n, pin, d.Host))
			continue
		}
		if want := majority[d.WorkloadPath]; d.WorkloadDigest != want {
			stray(r, &row, fmt.Sprintf("workload digest %s; the other receipts of this commit have %s", d.WorkloadDigest, want))
			continue
		}
		byRow[n] = append(byRow[n], r)
	}
	rank := func(r *FleetReceipt) int {
		switch {
		case r.Verified && r.Doc.Qualification == contract.QualificationVerdictPassed:
			return 0
		case r.Verified:
			return 1
		}
		return 2
	}
	var passed []candidate
	filled := map[string]int{} // host -> the first row it fills
	for i := range p.Rows {
		row := int64(i)
		cs := byRow[i]
		if len(cs) == 0 {
			m.Entries = append(m.Entries, contract.FleetManifestEntry{Row: &row, Status: contract.FleetManifestStatusMissing, Why: fmt.Sprintf("no receipt ran row %d", i)})
			continue
		}
		slices.SortFunc(cs, func(a, b *FleetReceipt) int {
			return cmp.Or(cmp.Compare(rank(a), rank(b)), cmp.Compare(a.Digest, b.Digest), cmp.Compare(a.Path, b.Path))
		})
		// One host fills one row, unless the plan pins the row to it: a host that already fills
		// an earlier row cannot fill this one (it would count twice among the fleet's hosts).
		pin := pinnedHost(p.Rows[i])
		at := slices.IndexFunc(cs, func(r *FleetReceipt) bool { _, used := filled[r.Doc.Host]; return !used || pin == r.Doc.Host })
		if at < 0 {
			for _, dup := range cs {
				stray(dup, &row, fmt.Sprintf("host %s already fills row %d: one host fills two rows only when the plan pins both to it", dup.Doc.Host, filled[dup.Doc.Host]))
			}
			m.Entries = append(m.Entries, contract.FleetManifestEntry{Row: &row, Status: contract.FleetManifestStatusMissing, Why: fmt.Sprintf("no receipt of a host that fills no other row ran row %d", i)})
			continue
		}
		r := cs[at]
		for j, dup := range cs {
			switch _, used := filled[dup.Doc.Host]; {
			case j == at:
			case used && pin != dup.Doc.Host:
				stray(dup, &row, fmt.Sprintf("host %s already fills row %d: one host fills two rows only when the plan pins both to it", dup.Doc.Host, filled[dup.Doc.Host]))
			default:
				stray(dup, &row, fmt.Sprintf("a second receipt for row %d (the row is bound to %s)", i, r.Digest))
			}
		}
		if _, used := filled[r.Doc.Host]; !used {
			filled[r.Doc.Host] = i
		}
		var whys []string
		if r.Doc.Qualification != contract.QualificationVerdictPassed {
			whys = append(whys, fmt.Sprintf("the qualification verdict on host %s is %s", r.Doc.Host, r.Doc.Qualification))
		}
		if !r.Verified {
			why := fmt.Sprintf("verification rejected the receipt: %d findings", r.Findings)
			if r.First != "" {
				why += ", the first: " + r.First
			}
			whys = append(whys, why)
		}
		switch {
		case len(whys) > 0:
			m.Entries = append(m.Entries, entryOf(r, &row, contract.FleetManifestStatusFailed, finding.ClipRunes(strings.Join(whys, "; "), 2048)))
		default:
			m.Entries = append(m.Entries, entryOf(r, &row, contract.FleetManifestStatusPassed, ""))
			passed = append(passed, candidate{r, i})
		}
	}
	key := func(e contract.FleetManifestEntry) (string, string) {
		if e.Receipt == nil {
			return "", e.Why
		}
		return e.Receipt.Digest, e.Receipt.Path
	}
	slices.SortFunc(strays, func(a, b contract.FleetManifestEntry) int {
		ad, ap := key(a)
		bd, bp := key(b)
		return cmp.Or(cmp.Compare(ad, bd), cmp.Compare(ap, bp))
	})
	m.Entries = append(m.Entries, strays...)
	for _, e := range m.Entries {
		switch e.Status {
		case contract.FleetManifestStatusPassed:
			m.Counts.Passed++
		case contract.FleetManifestStatusFailed:
			m.Counts.Failed++
		case contract.FleetManifestStatusMissing:
			m.Counts.Missing++
		case contract.FleetManifestStatusNotBelonging:
			m.Counts.NotBelonging++
		}
	}
	// Cross-host statistics over the passed rows, in row order.
	type point struct {
		host  string
		row   int
		value float64
	}
	type series struct {
		unit   string
		dir    contract.Direction
		points []point
	}
	all := map[string]*series{}
	for _, c := range passed {
		for _, v := range c.r.Doc.Metrics {
			s := all[v.Name]
			if s == nil {
				s = &series{unit: v.Unit, dir: v.Direction}
				all[v.Name] = s
			}
			if v.Unit != s.unit || v.Direction != s.dir {
				continue // another unit or direction under one name: not comparable, left out
			}
			s.points = append(s.points, point{c.r.Doc.Host, c.row, v.Value})
		}
	}
	names := make([]string, 0, len(all))
	for n := range all {
		names = append(names, n)
	}
	slices.Sort(names)
	outlierOf := map[string][]string{}
	for _, n := range names {
		s := all[n]
		xs := make([]float64, len(s.points))
		for i, pt := range s.points {
			xs[i] = pt.value
		}
		mad, med := metric.MAD(xs)
		st := contract.FleetManifestMetricStats{Name: n, Unit: s.unit, Direction: contract.MetricStatsDirection(s.dir), Hosts: int64(len(xs)), Median: med, Mad: mad,
			Outliers: []contract.FleetManifestOutlier{}}
		lo, hi := s.points[0], s.points[0]
		for _, pt := range s.points[1:] {
			if pt.value < lo.value {
				lo = pt
			}
			if pt.value > hi.value {
				hi = pt
			}
		}
		st.Min = contract.FleetManifestExtreme{Value: lo.value, Host: lo.host, Row: int64(lo.row)}
		st.Max = contract.FleetManifestExtreme{Value: hi.value, Host: hi.host, Row: int64(hi.row)}
		for _, pt := range s.points {
			if metric.IsOutlier(pt.value, med, mad, k) {
				score, _ := metric.OutlierScore(pt.value, med, mad)
				st.Outliers = append(st.Outliers, contract.FleetManifestOutlier{Host: pt.host, Row: int64(pt.row), Value: pt.value, Score: score})
				if ms := outlierOf[pt.host]; len(ms) == 0 || ms[len(ms)-1] != n {
					outlierOf[pt.host] = append(ms, n)
				}
			}
		}
		m.Metrics = append(m.Metrics, st)
	}
	m.OutlierHosts = []contract.FleetManifestOutlierHost{}
	for h, ms := range outlierOf {
		m.OutlierHosts = append(m.OutlierHosts, contract.FleetManifestOutlierHost{Host: h, Metrics: ms})
	}
	slices.SortFunc(m.OutlierHosts, func(a, b contract.FleetManifestOutlierHost) int {
		return cmp.Or(cmp.Compare(len(b.Metrics), len(a.Metrics)), cmp.Compare(a.Host, b.Host))
	})
	if m.Metrics == nil {
		m.Metrics = []contract.FleetManifestMetricStats{}
	}
	return m
}

// rowMismatch says how a receipt differs from the plan row it claims ("" when it does not).
func rowMismatch(pr contract.FleetRow, d *FleetReceiptDoc) string {
	switch {
	case d.WorkloadPath != pr.Workload:
		return fmt.Sprintf("workload %s; row %d runs %s", d.WorkloadPath, pr.Index, pr.Workload)
	case d.Variant != pr.Variant:
		return fmt.Sprintf("variant %s; row %d runs %s", d.Variant, pr.Index, pr.Variant)
	}
	names := make([]string, 0, len(pr.Variables))
	for n := range pr.Variables {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		got, ok := d.Variables[n]
		if !ok {
			return fmt.Sprintf("variable %s is not set; row %d sets %s", n, pr.Index, pr.Variables[n])
		}
		if variableText(got) != pr.Variables[n] {
			return fmt.Sprintf("variable %s is %s; row %d sets %s", n, variableText(got), pr.Index, pr.Variables[n])
		}
	}
	return ""
}

// Patterns of the members entryOf copies from a receipt that may not have validated.
var (
	HostIDPattern   = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{1,63}$`)
	resultIDPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,127}$`)
	gitPattern      = regexp.MustCompile(`^[0-9a-f]{40}$`)
	digestPattern   = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)
)

// maxPathRunes bounds a receipt path in an entry (the contract's bound).
const maxPathRunes = 4096

// entryOf is the entry of a receipt. Members of a receipt that was rejected are copied only when
// they have their contract's form; a receipt with no digest (unreadable) is named in why.
func entryOf(r *FleetReceipt, row *int64, status contract.FleetManifestStatus, why string) contract.FleetManifestEntry {
	e := contract.FleetManifestEntry{Row: row, Status: status, Why: why}
	if !digestPattern.MatchString(r.Digest) {
		e.Why = fmt.Sprintf("%s (%s)", why, finding.ClipRunes(r.Path, 512))
		return e
	}
	ref := &contract.FleetManifestReceiptRef{Path: finding.ClipRunes(r.Path, maxPathRunes), Digest: r.Digest, Verification: contract.ReceiptRefVerificationRejected}
	if r.Verified {
		ref.Verification = contract.ReceiptRefVerificationVerified
	}
	if d := r.Doc; d != nil {
		if HostIDPattern.MatchString(d.Host) {
			e.Host = d.Host
		}
		if id := d.ReceiptID; resultIDPattern.MatchString(id) {
			ref.ReceiptID = &id
		}
		if c := d.Commit; gitPattern.MatchString(c) {
			ref.Commit = &c
		}
		if wd := d.WorkloadDigest; digestPattern.MatchString(wd) {
			ref.WorkloadDigest = &wd
		}
		if q := contract.ReceiptRefQualification(d.Qualification); q.Valid() {
			ref.Qualification = &q
		}
	}
	e.Receipt = ref
	return e
}

// pinnedHost is the host id a plan row is pinned to ("" when it may run anywhere): a Slurm
// nodelist of one node, or a Kubernetes node selector on kubernetes.io/hostname, turned into a host
// id as the fleet job script turns the engine's node name into one (runner/fleet/script.go).
func pinnedHost(r contract.FleetRow) string {
	if r.Host == nil {
		return ""
	}
	node := ""
	switch {
	case r.Host.Slurm != nil && r.Host.Slurm.Nodelist != "" && !strings.ContainsAny(r.Host.Slurm.Nodelist, ",[ "):
		node = r.Host.Slurm.Nodelist
	case r.Host.Kubernetes != nil && r.Host.Kubernetes.NodeSelector["kubernetes.io/hostname"] != "":
		node = r.Host.Kubernetes.NodeSelector["kubernetes.io/hostname"]
	}
	return hostIDOf(node)
}

// hostIDOf is the fleet job script's host id of an engine's node name: lowercase, every byte
// outside [a-z0-9._-] replaced by '-', at most 64 bytes.
func hostIDOf(node string) string {
	b := []byte(node)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
			b[i] = c
		}
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			b[i] = '-'
		}
	}
	return string(b[:min(len(b), 64)])
}
