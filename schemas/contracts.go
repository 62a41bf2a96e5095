package schemas

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/jsonstrict"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

//go:embed json/*.schema.json
var schemaFS embed.FS

// Contract is one versioned contract.
type Contract struct {
	// Name is the contract name with its major version, e.g. "workload.v1".
	Name string
	// SchemaID is the value of the document's schema field, e.g. "qualkit.workload.v1".
	SchemaID string
	// URL is the exported JSON Schema's $id.
	URL string
	// File is the exported schema's file name under schemas/json/.
	File string
}

const schemaURLBase = "https://qualkit.dev/schemas/"

// Contracts lists every known contract, sorted by name.
func Contracts() []Contract {
	names := []string{contract.CaseResult, contract.Comparison, contract.ConversationSession, contract.DriverRequest, contract.DriverSpec, contract.DriverWorkerOutput, contract.EffectiveRunConfig, contract.FleetManifest, contract.FleetPlan, contract.LaunchRecipe, contract.LayerAttribution, contract.LifecycleRecord, contract.NextTokenResult, contract.PathAttribution, contract.Receipt, contract.ReportView, contract.RequestRecord, contract.RuntimeManifest, contract.TelemetrySample, contract.VerificationReport, contract.Workload}
	out := make([]Contract, len(names))
	for i, n := range names {
		out[i] = contractFor(n)
	}
	return out
}

func contractFor(name string) Contract {
	return Contract{Name: name, SchemaID: "qualkit." + name, URL: schemaURLBase + name + ".schema.json", File: name + ".schema.json"}
}

// Lookup returns the contract whose document schema field is schemaID.
func Lookup(schemaID string) (Contract, bool) {
	for _, c := range Contracts() {
		if c.SchemaID == schemaID {
			return c, true
		}
	}
	return Contract{}, false
}

// SchemaJSON returns the exported JSON Schema of a contract.
func SchemaJSON(name string) ([]byte, error) {
	b, err := schemaFS.ReadFile("json/" + name + ".schema.json")
	if err != nil {
		return nil, fmt.Errorf("%w: %s", ErrUnknownContract, name)
	}
	return b, nil
}

// Sentinel errors of validation; Violation.Err wraps one of them.
var (
	// ErrUnknownContract: the schema field names no contract this module knows.
	ErrUnknownContract = errors.New("unknown contract")
	// ErrSchema: the document does not satisfy its JSON Schema.
	ErrSchema = errors.New("schema violation")
	// ErrSemantic: the document breaks a rule the schema cannot express.
	ErrSemantic = errors.New("semantic rule violation")
	// ErrHistorical: the document is historical evidence current validators refuse.
	ErrHistorical = errors.New("historical evidence refused")
)

// Violation is one reason a document is invalid.
type Violation struct {
	// Pointer is the RFC 6901 JSON pointer of the offending value; "" is the document.
	Pointer string
	// Err wraps ErrSchema, ErrSemantic, ErrHistorical, ErrUnknownContract or a *DecodeError sentinel.
	Err error
}

func (v Violation) Error() string {
	var de *jsonstrict.DecodeError
	if errors.As(v.Err, &de) && de.Pointer == v.Pointer {
		return de.Error() // already carries the pointer
	}
	return displayPointer(v.Pointer) + ": " + v.Err.Error()
}

// Unwrap returns the wrapped error, so errors.Is sees the sentinel.
func (v Violation) Unwrap() error { return v.Err }

func displayPointer(p string) string {
	if p == "" {
		return "/"
	}
	return p
}

func violationf(ptr string, sentinel error, format string, args ...any) Violation {
	return Violation{Pointer: ptr, Err: fmt.Errorf("%w: "+format, append([]any{sentinel}, args...)...)}
}

// compiledSchemas holds each contract's compiled schema, compiled the first time a document of
// that contract is validated: a process checks a few contracts (a qualrun run, a qualverify
// verify), and compiling all of them, each checked against the JSON Schema meta-schema, cost a
// process about 0.4 s of CPU.
var compiledSchemas sync.Map // contract name -> *compiledSchema

type compiledSchema struct {
	once   sync.Once
	schema *jsonschema.Schema
	err    error
}

// schemaOf returns the compiled schema of the named contract.
func schemaOf(name string) (*jsonschema.Schema, error) {
	v, ok := compiledSchemas.Load(name)
	if !ok {
		if !slices.ContainsFunc(Contracts(), func(c Contract) bool { return c.Name == name }) {
			return nil, fmt.Errorf("%w: %s", ErrUnknownContract, name)
		}
		v, _ = compiledSchemas.LoadOrStore(name, &compiledSchema{})
	}
	cs := v.(*compiledSchema)
	cs.once.Do(func() { cs.schema, cs.err = compile(contractFor(name)) })
	return cs.schema, cs.err
}

// compile compiles one contract's embedded schema (no schema refers to another's).
func compile(ct Contract) (*jsonschema.Schema, error) {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	raw, err := SchemaJSON(ct.Name)
	if err != nil {
		return nil, err
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("parse embedded schema %s: %w", ct.File, err)
	}
	if err := c.AddResource(ct.URL, doc); err != nil {
		return nil, fmt.Errorf("add embedded schema %s: %w", ct.File, err)
	}
	s, err := c.Compile(ct.URL)
	if err != nil {
		return nil, fmt.Errorf("compile embedded schema %s: %w", ct.File, err)
	}
	return s, nil
}

var printer = message.NewPrinter(language.English)

// ValidateSchema checks a parsed document (as Parse returns it) against the exported JSON Schema
// of the named contract. It returns every violation, sorted by pointer; nil means valid.
// The error is non-nil only when validation could not be carried out.
func ValidateSchema(name string, doc any) ([]Violation, error) {
	s, err := schemaOf(name)
	if err != nil {
		return nil, err
	}
	verr := s.Validate(doc)
	if verr == nil {
		return nil, nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(verr, &ve) {
		return nil, fmt.Errorf("validate against %s: %w", name, verr)
	}
	var out []Violation
	seen := map[string]bool{}
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		v := Violation{Pointer: pointerOf(e.InstanceLocation), Err: fmt.Errorf("%w: %s", ErrSchema, e.ErrorKind.LocalizedString(printer))}
		if key := v.Error(); !seen[key] {
			seen[key] = true
			out = append(out, v)
		}
	}
	walk(ve)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Pointer < out[j].Pointer })
	return out, nil
}

func pointerOf(tokens []string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(jsonstrict.EscapePointerToken(t))
	}
	return b.String()
}
