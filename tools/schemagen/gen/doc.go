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
package gen
