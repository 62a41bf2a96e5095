// Package gen exports qualkit's CUE contracts to JSON Schema draft 2020-12.
//
// Every definition carrying an attribute @jsonschema(id="https://.../NAME.schema.json") is exported to
// NAME.schema.json with that $id. The export is linted for the losses cue v0.17.1 is known to make
// silently (see docs/contracts/README.md): a subschema that is literally true, an empty-object const,
// an object with properties that is not closed, RE2-only regular expression syntax. The corpus
// agreement test is the safety net for the losses a lint cannot see.
package gen
