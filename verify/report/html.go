package report

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"reflect"
	"strings"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/safetext"
	"github.com/qualkit/qualkit/verify/report/internal/figure"
	"github.com/qualkit/qualkit/verify/report/internal/format"
)

//go:embed page.css
var pageCSS string

//go:embed page.js
var pageJS string

//go:embed page.html.tmpl
var pageTemplate string

// csp forbids everything the page does not carry: no fetch, no image, no font, no frame, no
// form; only its own stylesheet and script, by hash.
var csp = "default-src 'none'; style-src " + format.CSPHash(pageCSS) + "; script-src " + format.CSPHash(pageJS) +
	"; img-src 'none'; font-src 'none'; connect-src 'none'; base-uri 'none'; form-action 'none'"

var page = template.Must(template.New("page").Funcs(template.FuncMap{
	"num":      format.Num,
	"numPtr":   format.NumPtr,
	"pct":      format.Pct,
	"signed":   format.Signed,
	"short":    format.Short,
	"yesNo":    format.YesNo,
	"title":    title,
	"isolated": isolated,
	"tputSVG":  func(c Case) template.HTML { return template.HTML(figure.Throughput(c)) },
	"turns":    func(c Case) [][]string { return turnsTable(c.Rows) },
	"rateSVG":  func(c Case) template.HTML { return template.HTML(figure.Rate(c)) },
	"timeline": func(l *Lifecycle) template.HTML {
		return template.HTML(figure.Timeline(l.Events))
	},
	"rowP":   func(r Row, metric string, q int) string { return rowP(&r, metric, q) },
	"join":   joinAny,
	"plus1":  func(i int) int { return i + 1 },
	"ruleOf": func(v any) string { return ruleClass(fmt.Sprint(v)) }, // statuses are enum types
	"status": func(v any) string { return statusClass(fmt.Sprint(v)) },
	// allPublishable: a verified view of a receipt that is not publishable (run with
	// --allow-unpublished-unsafe, verified with --allow-unpublished-unsafe) is never "all verified".
	"allPublishable": func(rs []Receipt) bool {
		for _, r := range rs {
			if !r.Publishable {
				return false
			}
		}
		return true
	},
	"hasDist": func(r Row, metric string) bool {
		return dist(&r, metric) != nil
	},
	"agree":       agree,
	"exact":       format.Exact,
	"exactPtr":    format.ExactPtr,
	"signedExact": format.SignedExact,
	"layerSVG":    func(la *LayerAttribution) template.HTML { return template.HTML(figure.Layers(la)) },
	"driverLine":  verdictLine,
	"deref":       func(p *int64) int64 { return *p },
	"passFail": func(ok bool) string {
		if ok {
			return "ok"
		}
		return "bad"
	},
}).Parse(pageTemplate))

// HTML writes the view as one self-contained page: inline CSS, inline SVG charts, one inline
// script (sortable tables, a readiness marker for tests), no external reference of any kind.
func (v *View) HTML(w io.Writer) error {
	var buf bytes.Buffer
	data := pageData{v, template.CSS(pageCSS), template.JS(pageJS), csp}
	if err := page.Execute(&buf, data); err != nil {
		return fmt.Errorf("render html: %w", err)
	}
	// html/template keeps markup and script out of every value; a bidi override, C1 control or
	// invalid byte inside a value would still reach the reader (a browser honours RLO), so each
	// becomes a visible escape. The template and the page's CSS and script hold none of them.
	_, err := io.WriteString(w, safetext.EscapeDocument(buf.String()))
	return err
}

// pageData is what the page template renders.
type pageData struct {
	*View
	CSS template.CSS
	JS  template.JS
	CSP string
}

// CDF draws the CDF of Receipts[receipt].Cases[kase].Rows[row]'s distribution d.
func (p pageData) CDF(receipt, kase, row int, d *Distribution) template.HTML {
	return template.HTML(figure.CDF(string(d.Label), d.Unit, p.samplesOf(receipt, kase, row, string(d.Metric)), d.P50, d.P99))
}

// ruleClass is the CSS class of a rule's status (a RuleStatus or a DeltaRule, spelt alike).
func ruleClass(status string) string {
	switch status {
	case string(contract.RuleStatusPassed):
		return "ok"
	case string(contract.RuleStatusFailed):
		return "bad"
	}
	return "muted"
}

// statusClass is the CSS class of a word of the view's status vocabularies: a verdict, a check,
// case, run, driver or lifecycle status (each spells passed and failed alike), a listener
// ownership or a residue.
func statusClass(status string) string {
	switch status {
	case string(contract.CaseStatusPassed), string(contract.VerificationVerdictVerified), string(contract.LifecycleOwnershipOwned), string(contract.LifecycleResidueNone):
		return "ok"
	case string(contract.CaseStatusFailed), string(contract.VerificationVerdictRejected), string(contract.LifecycleOwnershipNotOwned), string(contract.LifecycleResidueFound):
		return "bad"
	}
	return "muted"
}

// agree says whether the page's p50 and p99 equal the receipt's.
func agree(d Distribution) string {
	if d.ReceiptP50 == nil || d.ReceiptP99 == nil {
		return "not in the receipt"
	}
	if *d.ReceiptP50 == d.P50 && *d.ReceiptP99 == d.P99 {
		return "equal to the receipt's"
	}
	return fmt.Sprintf("receipt says p50 %s, p99 %s", format.Num(*d.ReceiptP50), format.Num(*d.ReceiptP99))
}

// joinAny joins the elements of a slice of strings or of string enums (contract types) with sep.
func joinAny(v any, sep string) string {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Slice {
		return fmt.Sprint(v)
	}
	parts := make([]string, rv.Len())
	for i := range parts {
		parts[i] = fmt.Sprint(rv.Index(i).Interface())
	}
	return strings.Join(parts, sep)
}
