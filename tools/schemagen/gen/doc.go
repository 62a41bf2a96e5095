// Package gen exports qualkit's CUE contracts to JSON Schema draft 2020-12 and generates their Go.
//
// Every definition carrying an attribute @jsonschema(id="https://.../NAME.schema.json") is exported to
// NAME.schema.json with that $id. The export is linted for the losses cue v0.17.1 is known to make
// silently (see docs/contracts/README.md): a subschema that is literally true, an empty-object const,
// an object with properties that is not closed, RE2-only regular expression syntax. The corpus
// agreement test is the safety net for the losses a lint cannot see.
//
// GenerateGo writes package contract (schemas/contract): the contract name and schema id
// constants, a typed string enum for every CUE disjunction of strings, the single-valued strings,
// the artifact-kind table of #ArtifactKinds' @kind attributes, and the document types
// (docs/contracts/README.md has the naming rules and the @go attributes). The Go is derived from
// the evaluated CUE values (Fields(cue.Optional(true)), Expr() for disjunctions and unions,
// ReferencePath for named definitions, Doc(), Attribute("go")), not from the exported JSON
// Schema: the export inlines named definitions into $defs under generated names, drops the
// attributes and the doc comments of fields, and loses which enum a field's values came from,
// all of which the Go names and types need.
//
// An embedded section (a regular CUE field such as driver.Header, embedded in a definition) is an
// embedded Go struct at the embedding's source position. A union field whose alternatives have
// different struct types gets one merged struct (pointers where a member's zero value is valid)
// and, with a discriminator, one accessor per named alternative type on the union, testing the
// discriminator and the presence of the alternative's required members. A merged struct, not an
// interface with an UnmarshalJSON dispatch: strict decoding (DisallowUnknownFields) and the
// reflective walks over the types (the integer-literal check, TestTypesMatchSchemas) keep working
// on plain structs, and callers call one accessor.
package gen
