package campaign

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/rules"
)

// ErrVariable reports a --var that is unknown, malformed, of the wrong type or outside its constraints.
var ErrVariable = errors.New("bad variable")

// ResolveVariables parses NAME=VALUE assignments against the workload's typed variables, applies
// defaults, and checks constraints and required variables. The result maps every declared
// variable that has a value to a string, int64, float64 or bool.
func ResolveVariables(decl []contract.Variable, assignments []string) (map[string]any, error) {
	byName := map[string]contract.Variable{}
	var names []string
	for _, v := range decl {
		byName[v.Name] = v
		names = append(names, v.Name)
	}
	out := map[string]any{}
	for _, a := range assignments {
		name, raw, ok := strings.Cut(a, "=")
		if !ok {
			return nil, fmt.Errorf("%w: --var %q is not NAME=VALUE", ErrVariable, a)
		}
		v, known := byName[name]
		if !known {
			if name == "seed" || name == "model_path" {
				return nil, fmt.Errorf("%w: %s is built in (the workload's seed; --model) and cannot be set with --var", ErrVariable, name)
			}
			return nil, fmt.Errorf("%w: unknown variable %q; this workload declares: %s", ErrVariable, name, listOrNone(names))
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("%w: --var %s given twice", ErrVariable, name)
		}
		val, err := parseTyped(v.Type, raw)
		if err != nil {
			return nil, fmt.Errorf("%w: --var %s=%q: %v", ErrVariable, name, raw, err)
		}
		if msg := rules.ValueViolation(v, val, nil); msg != "" {
			return nil, fmt.Errorf("%w: --var %s: %s", ErrVariable, name, msg)
		}
		out[name] = val
	}
	for _, v := range decl {
		if _, set := out[v.Name]; set {
			continue
		}
		if v.Required {
			return nil, fmt.Errorf("%w: required variable %s (%s) is not set; add --var %s=VALUE", ErrVariable, v.Name, v.Description, v.Name)
		}
		if v.Default != nil {
			val, err := parseTyped(v.Type, fmt.Sprint(v.Default))
			if err != nil {
				return nil, fmt.Errorf("%w: default of %s: %v", ErrVariable, v.Name, err)
			}
			out[v.Name] = val
		}
	}
	return out, nil
}

func listOrNone(names []string) string {
	if len(names) == 0 {
		return "(none)"
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

func parseTyped(typ contract.VariableType, raw string) (any, error) {
	switch typ {
	case contract.VariableTypeString:
		return raw, nil
	case contract.VariableTypeInteger:
		n, err := strconv.ParseInt(raw, 10, 64)
		if err != nil {
			return nil, errors.New("not an integer")
		}
		return n, nil
	case contract.VariableTypeNumber:
		f, err := strconv.ParseFloat(raw, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, errors.New("not a finite number")
		}
		return f, nil
	case contract.VariableTypeBoolean:
		switch raw {
		case "true":
			return true, nil
		case "false":
			return false, nil
		}
		return nil, errors.New("not true or false")
	}
	return nil, fmt.Errorf("unknown type %s", typ)
}

// substitute replaces a whole-value ${name} placeholder; other values are returned unchanged.
func substitute(v string, vals map[string]string) (string, error) {
	if strings.HasPrefix(v, "${") && strings.HasSuffix(v, "}") {
		name := v[2 : len(v)-1]
		if val, ok := vals[name]; ok {
			return val, nil
		}
		return "", fmt.Errorf("%w: placeholder %s has no value (model_path needs --model)", ErrVariable, v)
	}
	return v, nil
}
