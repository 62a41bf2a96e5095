// Package report renders verified qualkit evidence for people: one self-contained HTML page
// (inline CSS and SVG charts drawn in Go, one small inline script, nothing fetched), aligned
// text tables for a terminal, and JSON for dashboards (docs/report.md).
//
// Build verifies every receipt first (verify.Inspect) and compares each later receipt with the
// first (verify.Compare); the View it returns says whether everything verified, and a caller
// refuses to render one that did not unless the user asked for it (every section is then stamped
// UNVERIFIED). Every number of a View is computed from the retained request records by verify's
// formulas (docs/metrics.md), with the receipt's own value beside it for cross-checking.
//
// It lives in the verify module and obeys its dependency rules: no runner, attest, net/http,
// os/exec or cue.
package report
