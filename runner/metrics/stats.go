package metrics

import formulas "github.com/qualkit/qualkit/schemas/metric"

// MinSamplesP999 is the fewest samples for which a distribution's p99.9 is emitted
// (formulas.MinSamplesP999).
const MinSamplesP999 = formulas.MinSamplesP999

// Summary describes a sample: count, min, max, mean and percentiles (formulas.Summary).
type Summary = formulas.Summary

// Percentile is formulas.Percentile: Hyndman and Fan's type 7 over a sorted sample.
func Percentile(sorted []float64, p float64) float64 { return formulas.Percentile(sorted, p) }

// Summarize is formulas.Summarize: it sorts a copy of xs and summarizes it.
func Summarize(xs []float64) Summary { return formulas.Summarize(xs) }
