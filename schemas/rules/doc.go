// Package rules holds the semantic rules of the contracts that their JSON Schemas cannot express
// (uniqueness, cross-field agreement, placeholders, the shell rule on argument vectors, driver
// tolerance evaluation and derived-field recomputation). A rule returns Problems; the registry in
// package schemas wraps them as violations carrying schemas.ErrSemantic.
package rules
