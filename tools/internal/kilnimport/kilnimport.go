// Package kilnimport converts the documents of the Kiln qualification harness that qualkit
// replaces into qualkit contracts: a Kiln workload (schema_version 1) into a qualkit.workload.v1
// and a Kiln owned-server launch document (kiln.serving-benchmark-server-launch.v1) into a
// qualkit.launch-recipe.v1.
//
// A conversion says, field by field, where each Kiln field went (Mapping), and refuses the whole
// document, naming every field, when it carries what qualkit deliberately does not carry: a host
// temperature policy (thermal guards, cooldowns, pacing: a receipt records what ran, it does not
// keep a host cool) or a machine-specific architecture target (rocm_archs, CUDA architecture lists,
// gfx/sm targets: a workload describes a campaign, not one machine's build). The library is silent;
// the CLI (qualrun import kiln) prints.
package kilnimport

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/qualkit/qualkit/schemas"
	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/jsonstrict"
)

// MaxDocumentBytes bounds a Kiln document (Kiln's own loaders cap launch documents at 64 KiB).
const MaxDocumentBytes = 1 << 20

// Kiln document kinds.
const (
	KindWorkload = "workload" // not a contract value: the importer's name for a Kiln workload document
	KindLaunch   = "launch"
)

// LaunchSchema is the schema of a Kiln owned-server launch document.
const LaunchSchema = "kiln.serving-benchmark-server-launch.v1"

// Defaults of what a Kiln launch document does not say (docs/qualrun.md, "Importing from Kiln").
const (
	DefaultProbeTimeoutMs   = 2000
	DefaultCgroupAccounting = contract.IsolationCgroupAccountingPreferred
)

// ErrRefused marks a document that is not converted; the error names every reason.
var ErrRefused = errors.New("kiln import refused")

// Mapping says where one Kiln field went: To is the qualkit field (a JSON pointer into the
// converted document, "" when the field is not carried), Note says how or why.
type Mapping struct {
	From, To, Note string
}

// Options are the facts a launch document does not carry (they live in Kiln's server TOML).
type Options struct {
	// BaseURL and ModelID fill a launch recipe's base_url and model_id; a launch import needs both.
	BaseURL, ModelID string
}

// Result is a converted document.
type Result struct {
	// Kind is KindWorkload or KindLaunch; Contract the qualkit contract of Doc.
	Kind, Contract string
	// Doc is the converted document (indented JSON, a final newline), valid under Contract.
	Doc      []byte
	Mappings []Mapping
}

// Convert converts one Kiln document. raw must already be bounded by the caller (see
// MaxDocumentBytes); name labels it in errors. The error wraps ErrRefused, with one line per
// reason, for a document that is not a Kiln workload or launch document, carries a field qualkit
// does not carry, or does not convert into a valid qualkit document.
func Convert(raw []byte, name string, opts Options) (*Result, error) {
	parsed, err := jsonstrict.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %s is not strict JSON: %v", ErrRefused, name, err)
	}
	top, ok := parsed.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%w: %s is not a JSON object", ErrRefused, name)
	}
	kind := ""
	switch {
	case top["schema"] == LaunchSchema:
		kind = KindLaunch
	case fmt.Sprint(top["schema_version"]) == "1" && top["workload_id"] != nil:
		kind = KindWorkload
	}
	var doc map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrRefused, name, err)
	}
	var reasons []string
	if kind == "" {
		what := "a JSON object without schema_version 1 and workload_id, nor schema " + LaunchSchema
		if s, ok := top["schema"].(string); ok {
			what = "schema " + s
			if strings.Contains(s, "oracle") || strings.Contains(s, "result") || strings.Contains(s, "attribution") {
				what += ", a Kiln evidence result"
			}
		}
		reasons = append(reasons, fmt.Sprintf("%s is %s: qualrun import kiln converts only Kiln workloads (schema_version 1) and owned-server launch documents (%s); evidence is not imported, it is re-run", name, what, LaunchSchema))
	}
	reasons = append(reasons, notCarried(doc)...)
	if len(reasons) > 0 {
		return nil, fmt.Errorf("%w:\n  %s", ErrRefused, strings.Join(reasons, "\n  "))
	}
	var res *Result
	if kind == KindLaunch {
		res, err = convertLaunch(raw, opts)
	} else {
		res, err = convertWorkload(raw)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrRefused, name, err)
	}
	if err := schemas.CheckAs(res.Doc, "the converted "+kind, res.Contract); err != nil {
		return nil, fmt.Errorf("%w: %s does not convert into a valid qualkit.%s:\n%v", ErrRefused, name, res.Contract, err)
	}
	return res, nil
}

var (
	// archKey names a machine-specific architecture target.
	archKey = regexp.MustCompile(`(?i)^(rocm_archs?|cuda_archs?|cuda_arch_list|gpu_archs?|gpu_targets|amdgpu_targets|hip_archs?|offload_arch|target_cpu|torch_cuda_arch_list|pytorch_rocm_arch|cmake_cuda_architectures|cmake_hip_architectures|hsa_override_gfx_version)$`)
	// archValue is an architecture target written as a value (gfx1151, sm_89, --offload-arch=...).
	archValue = regexp.MustCompile(`(?i)(^|[=\s,;])(gfx[0-9]{3,4}[a-z]?|sm_[0-9]{2,3}a?|compute_[0-9]{2,3})($|[\s,;])|--offload-arch|-march=native|target-cpu=native`)
)

// notCarriedWhy ends a refusal that names fields notCarried found.
const notCarriedWhy = "qualkit does not carry these (a receipt records what ran on the host it names; it neither keeps a host cool nor pins one machine's build): remove them, or keep them in the host's own tooling"

// notCarried names the fields of doc that qualkit deliberately does not carry, sorted by
// pointer: host temperature policy and machine-specific architecture targets (and schemas'
// version-1 markers). A flagged member is named once, not its members.
func notCarried(doc map[string]any) []string {
	seen := map[string]string{}
	var walk func(n any, at string)
	walk = func(n any, at string) {
		switch n := n.(type) {
		case map[string]any:
			if s, ok := n["schema"].(string); ok && schemas.TemperaturePolicyName(s) && at != "" {
				seen[at] = "host temperature policy (" + s + ")"
				return
			}
			for k, v := range n {
				p := at + "/" + pointerToken(k)
				switch {
				case schemas.TemperaturePolicyName(k): // by meaning, whatever the name (schemas' one definition)
					seen[p] = "host temperature policy"
				case archKey.MatchString(k):
					seen[p] = "machine-specific architecture target"
				default:
					walk(v, p)
				}
			}
		case []any:
			for i, v := range n {
				walk(v, fmt.Sprintf("%s/%d", at, i))
			}
		case string:
			if archValue.MatchString(n) {
				seen[at] = fmt.Sprintf("machine-specific architecture target (%q)", clip(n, 40))
			}
		}
	}
	walk(doc, "")
	covered := func(p string) bool {
		for q := range seen {
			if p == q || strings.HasPrefix(p, q+"/") {
				return true
			}
		}
		return false
	}
	for _, m := range schemas.HistoricalMarkers(doc) {
		if !covered(m.Pointer) {
			seen[m.Pointer] = "version-1 machine-specific policy (" + m.Name + ")"
		}
	}
	ptrs := make([]string, 0, len(seen))
	for p := range seen {
		ptrs = append(ptrs, p)
	}
	sort.Strings(ptrs)
	out := make([]string, 0, len(ptrs)+1)
	for _, p := range ptrs {
		out = append(out, p+": "+seen[p])
	}
	if len(out) > 0 {
		out = append(out, notCarriedWhy)
	}
	return out
}

func pointerToken(k string) string {
	return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// encode writes v as the converted document: indented, a final newline, numbers as decoded.
func encode(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// strictDecode decodes raw into v, refusing a member v does not have (the Kiln contracts are
// closed: an unknown member is a field this importer does not know how to map).
func strictDecode(raw []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("not a Kiln document this importer maps: %v", err)
	}
	return nil
}
