// Package fleetpage lays out and writes the fleet report page: the hosts x metrics heat table of
// a fleet manifest that verify checked, with its outlier hosts first, and the rows that did not
// pass (docs/fleet.md). The page is one self-contained HTML file: its stylesheet is allowed by
// hash, it carries no script and fetches nothing.
package fleetpage
