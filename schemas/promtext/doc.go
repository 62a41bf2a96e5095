// Package promtext reads the Prometheus text exposition format (version 0.0.4, what a server's
// /metrics page serves) strictly and bounded by Parse, and compares two pages of one server by
// Deltas: the change of every cumulative series between a scrape before and one after. The runner
// scrapes with it and the verifier recomputes the scrapes' deltas with the same functions.
package promtext
