package load

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"
)

// scrape GETs BaseURL/metrics with a plain net/http client (not the measured client's
// connections) and returns the page, or nil with a warning in tel. A scrape happens only between
// a row's warmups and its measured requests and after them, never during them.
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
	r.log.log.Debug("scraped /metrics", "when", when, "bytes", len(body), "took", time.Since(start))
	return body
}
