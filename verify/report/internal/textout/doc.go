// Package textout writes the text form of a report: lines made safe for a terminal
// (schemas/safetext), free text wrapped under a label, and tables aligned in columns, no line
// wider than Width columns.
package textout
