// Package format writes the numbers and digests of a report for people (about four significant
// digits, or the shortest decimal that reads back as the same float64 where a number must be shown
// unrounded) and the Content-Security-Policy source of an inline element. The report page, its
// text form, its CSV and the fleet page all format through it, so they agree.
package format
