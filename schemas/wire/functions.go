package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/qualkit/qualkit/schemas/jsonstrict"
)

// Function tools (docs/metrics.md "Tool calls"): the functions a case's tools file offers, each
// with its compiled parameters schema, and the one judgement of a call's validity, which the
// runner records and the verifier makes again from the arguments a record keeps.

const (
	// MaxFunctions bounds the function tools of a tools file.
	MaxFunctions = 128
	// MaxKeptArgumentBytes bounds the arguments a request record keeps of one call (valid UTF-8
	// of at most this many bytes): longer ones are kept by digest and size only.
	MaxKeptArgumentBytes = 16 << 10
)

// Functions are a tools file's functions by name; a nil schema accepts any JSON object.
type Functions struct {
	fns map[string]*jsonschema.Schema
}

var functionNamePattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// ValidFunctionName reports whether name is an OpenAI function name: 1 to 64 of A-Z a-z 0-9 _ -.
func ValidFunctionName(name string) bool { return functionNamePattern.MatchString(name) }

// ParseFunctions parses a tools file: a JSON array of 1 to MaxFunctions OpenAI function tools
// {"type":"function","function":{"name","description"?,"parameters"?,"strict"?}} with distinct
// names, each parameters a JSON Schema (draft 2020-12 unless it says otherwise) that compiles
// without loading anything. Errors name the tool.
func ParseFunctions(data []byte) (*Functions, error) {
	var raw []json.RawMessage
	if err := jsonstrict.DecodeInto(data, &raw); err != nil {
		return nil, fmt.Errorf("want a JSON array of function tools: %v", err)
	}
	if len(raw) == 0 || len(raw) > MaxFunctions {
		return nil, fmt.Errorf("want 1 to %d tools, have %d", MaxFunctions, len(raw))
	}
	out := &Functions{fns: map[string]*jsonschema.Schema{}}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(jsonschema.SchemeURLLoader{}) // no file or network references
	for i, r := range raw {
		var w struct {
			Type     *string `json:"type"`
			Function *struct {
				Name        *string         `json:"name"`
				Description *string         `json:"description"`
				Parameters  json.RawMessage `json:"parameters"`
				Strict      *bool           `json:"strict"`
			} `json:"function"`
		}
		if err := jsonstrict.DecodeInto(r, &w); err != nil {
			return nil, fmt.Errorf("tool %d: %v", i, err)
		}
		if w.Type == nil || *w.Type != "function" || w.Function == nil || w.Function.Name == nil {
			return nil, fmt.Errorf("tool %d: want {\"type\": \"function\", \"function\": {\"name\": ...}}", i)
		}
		name := *w.Function.Name
		if !functionNamePattern.MatchString(name) {
			return nil, fmt.Errorf("tool %d: function name %.80q: want 1 to 64 of A-Z a-z 0-9 _ -", i, name)
		}
		if _, dup := out.fns[name]; dup {
			return nil, fmt.Errorf("tool %d: function %s declared twice", i, name)
		}
		var sch *jsonschema.Schema
		if p := bytes.TrimSpace(w.Function.Parameters); len(p) > 0 && string(p) != "null" {
			if p[0] != '{' {
				return nil, fmt.Errorf("tool %d (%s): parameters: want a JSON Schema object", i, name)
			}
			doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(p))
			if err != nil {
				return nil, fmt.Errorf("tool %d (%s): parameters: %v", i, name, err)
			}
			url := "qualkit:tools/" + strconv.Itoa(i)
			if err := c.AddResource(url, doc); err != nil {
				return nil, fmt.Errorf("tool %d (%s): parameters: %v", i, name, err)
			}
			if sch, err = c.Compile(url); err != nil {
				return nil, fmt.Errorf("tool %d (%s): parameters do not compile as a JSON Schema: %v", i, name, err)
			}
		}
		out.fns[name] = sch
	}
	return out, nil
}

// Has reports whether the tools offer function name.
func (f *Functions) Has(name string) bool {
	if f == nil {
		return false
	}
	_, ok := f.fns[name]
	return ok
}

// Names are the offered functions' names, sorted.
func (f *Functions) Names() []string {
	if f == nil {
		return nil
	}
	return slices.Sorted(maps.Keys(f.fns))
}

// Invalid says why args are not a valid call of function name ("" when they are): the name is an
// offered function and the arguments are UTF-8, one JSON document, an object, valid against the
// function's parameters. Nil Functions offer none.
func (f *Functions) Invalid(name string, args []byte) string {
	if f == nil {
		return "the case offers no tools"
	}
	sch, ok := f.fns[name]
	if !ok {
		return fmt.Sprintf("function %.64q is not offered", name)
	}
	if !utf8.Valid(args) {
		return fmt.Sprintf("arguments of %s are not UTF-8", name)
	}
	if !json.Valid(args) {
		return fmt.Sprintf("arguments of %s are not one JSON document", name)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(args))
	if err != nil {
		return fmt.Sprintf("arguments of %s are not JSON: %v", name, err)
	}
	if _, obj := v.(map[string]any); !obj {
		return fmt.Sprintf("arguments of %s are not a JSON object", name)
	}
	if sch == nil {
		return ""
	}
	if err := sch.Validate(v); err != nil {
		return fmt.Sprintf("arguments of %s do not satisfy its parameters: %s", name, oneLine(err.Error()))
	}
	return ""
}

// KeptArguments returns the arguments a record keeps of a call (ok false: too long or not
// UTF-8, kept by digest and size only).
func KeptArguments(args []byte) (string, bool) {
	if len(args) > MaxKeptArgumentBytes || !utf8.Valid(args) {
		return "", false
	}
	return string(args), true
}

// oneLine joins a multi-line message.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
