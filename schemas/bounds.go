package schemas

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
)

// Bounds are the numeric limits a contract's exported JSON Schema sets on its values, by path:
// object members joined by ".", "[]" for an array's items ("row.concurrency", "events",
// "assertions[].detail"). Each path maps the limit keywords it carries (minimum, maximum,
// exclusiveMinimum, exclusiveMaximum, minLength, maxLength, minItems, maxItems) to their values.
// A value whose schema is a choice of several non-null branches carries no bounds (they would
// be ambiguous). Fast paths that mirror a contract for speed (verify's request-record reader)
// read their limits here, so the CUE source stays the one place of each number.
type Bounds map[string]map[string]float64

var limitKeywords = []string{"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minLength", "maxLength", "minItems", "maxItems"}

var (
	boundsMu    sync.Mutex
	boundsCache = map[string]Bounds{}
)

// BoundsOf returns the bounds of the named contract's exported schema.
func BoundsOf(name string) (Bounds, error) {
	boundsMu.Lock()
	defer boundsMu.Unlock()
	if b, ok := boundsCache[name]; ok {
		return b, nil
	}
	raw, err := SchemaJSON(name)
	if err != nil {
		return nil, err
	}
	var root map[string]any
	if err := json.Unmarshal(raw, &root); err != nil {
		return nil, fmt.Errorf("parse schema %s: %w", name, err)
	}
	defs, _ := root["$defs"].(map[string]any)
	b := Bounds{}
	var walk func(n map[string]any, path string, depth int)
	walk = func(n map[string]any, path string, depth int) {
		if depth > 64 {
			return
		}
		if ref, ok := n["$ref"].(string); ok {
			if d, ok := defs[strings.TrimPrefix(ref, "#/$defs/")].(map[string]any); ok {
				walk(d, path, depth+1)
			}
		}
		for _, k := range limitKeywords {
			if v, ok := n[k].(float64); ok && path != "" {
				if b[path] == nil {
					b[path] = map[string]float64{}
				}
				b[path][k] = v
			}
		}
		if all, ok := n["allOf"].([]any); ok {
			for _, a := range all {
				if m, ok := a.(map[string]any); ok {
					walk(m, path, depth+1)
				}
			}
		}
		if anyOf, ok := n["anyOf"].([]any); ok {
			var branches []map[string]any
			for _, a := range anyOf {
				if m, ok := a.(map[string]any); ok && m["type"] != "null" {
					branches = append(branches, m)
				}
			}
			if len(branches) == 1 {
				walk(branches[0], path, depth+1)
			}
		}
		if props, ok := n["properties"].(map[string]any); ok {
			for k, v := range props {
				if m, ok := v.(map[string]any); ok {
					p := k
					if path != "" {
						p = path + "." + k
					}
					walk(m, p, depth+1)
				}
			}
		}
		if items, ok := n["items"].(map[string]any); ok {
			walk(items, path+"[]", depth+1)
		}
	}
	walk(root, "", 0)
	boundsCache[name] = b
	return b, nil
}

// MustBoundsOf is BoundsOf for a contract this module embeds; it panics when the schema is missing.
func MustBoundsOf(name string) Bounds {
	b, err := BoundsOf(name)
	if err != nil {
		panic(err)
	}
	return b
}

// Limit returns the value of keyword at path; it panics when the schema sets no such limit, so a
// reader built on a bound the contract dropped fails at start, not silently.
func (b Bounds) Limit(path, keyword string) float64 {
	v, ok := b[path][keyword]
	if !ok {
		panic(fmt.Sprintf("schemas: the contract sets no %s on %s", keyword, path))
	}
	return v
}

// IntLimit is Limit for integer limits (counts, lengths, integer ranges).
func (b Bounds) IntLimit(path, keyword string) int64 { return int64(b.Limit(path, keyword)) }
