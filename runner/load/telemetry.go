package load

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/metric"
)

// scrape GETs BaseURL/metrics with a plain net/http client (not the measured client's
// connections) and returns the page scrubbed of secrets (Plan.ScrubPage, and the bearer token), or
// nil with a warning in tel. A scrape happens only between a row's warmups and its measured
// requests and after them, never during them.
func (r *runner) scrape(ctx context.Context, tel *Telemetry, when string) []byte {
	ctx, cancel := context.WithTimeout(ctx, ScrapeTimeout)
	defer cancel()
	tr := &http.Transport{DisableKeepAlives: true, Proxy: nil}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.client.metricsURL(), nil)
	if err != nil {
		tel.Warnings = append(tel.Warnings, fmt.Sprintf("scrape %s the row: %v", when, err))
		return nil
	}
	if r.client.token != "" {
		req.Header.Set("Authorization", "Bearer "+r.client.token)
	}
	start := time.Now()
	resp, err := hc.Do(req)
	if err != nil {
		tel.Warnings = append(tel.Warnings, fmt.Sprintf("scrape %s the row: %v", when, redact(err.Error(), r.client.token)))
		return nil
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxScrapeBytes+1))
	switch {
	case err != nil:
		tel.Warnings = append(tel.Warnings, fmt.Sprintf("scrape %s the row: read: %v", when, err))
		return nil
	case resp.StatusCode != http.StatusOK:
		tel.Warnings = append(tel.Warnings, fmt.Sprintf("scrape %s the row: HTTP %d", when, resp.StatusCode))
		return nil
	case len(body) > MaxScrapeBytes:
		tel.Warnings = append(tel.Warnings, fmt.Sprintf("scrape %s the row: page larger than %d bytes", when, MaxScrapeBytes))
		return nil
	}
	if r.plan.ScrubPage != nil {
		body = r.plan.ScrubPage(body)
	}
	body = []byte(redact(string(body), r.client.token))
	if len(body) > MaxScrapeBytes {
		tel.Warnings = append(tel.Warnings, fmt.Sprintf("scrape %s the row: page larger than %d bytes once its secrets are replaced", when, MaxScrapeBytes))
		return nil
	}
	r.log.log.Debug("scraped /metrics", "when", when, "bytes", len(body), "took", time.Since(start))
	return body
}

// deltas computes the row's server metrics from the two scrubbed pages (metric.ServerTelemetry,
// which the verifier recomputes from the kept pages) and keeps the pages, the series deltas and
// the warnings in tel. Without both pages, or with a page that does not parse, the row has no
// server metrics and keeps no page.
func (tel *Telemetry) deltas(before, after []byte) []contract.Metric {
	if before == nil || after == nil {
		return nil
	}
	ms, series, warns, err := metric.ServerTelemetry(before, after)
	if err != nil {
		tel.Warnings = append(tel.Warnings, err.Error())
		return nil
	}
	tel.Series, tel.Before, tel.After = series, before, after
	tel.Warnings = append(tel.Warnings, warns...)
	return ms
}
