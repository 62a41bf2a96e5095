package campaign

import (
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/qualkit/qualkit/schemas/contract"
)

// Preflight checks that what the workload says about a run is what will run.

// serverFact is one value about the server that the launch recipe decides.
type serverFact struct {
	where string // e.g. "base_url" or "command[2] (--listen)"
	value string
}

// recipeFacts lists what the launch recipe decides about the server: its host, port, listen
// address, base URL and model id, from base_url and model_id, and from --listen, --host and
// --port in its argv (as --flag VALUE or --flag=VALUE).
func (p *Plan) recipeFacts() map[string][]serverFact {
	r := p.recipe
	facts := map[string][]serverFact{}
	add := func(key, where, v string) { facts[key] = append(facts[key], serverFact{where, v}) }
	if u, err := url.Parse(r.BaseURL); err == nil && u.Host != "" {
		add("base_url", "base_url", strings.TrimRight(r.BaseURL, "/"))
		add("listen", "base_url", u.Host)
		add("host", "base_url", u.Hostname())
		if port := u.Port(); port != "" {
			add("port", "base_url", port)
		}
	}
	if p.cfg.ModelID != "" {
		add("model_id", "--model-id", r.ModelID)
	} else {
		add("model_id", "model_id", r.ModelID)
	}
	for i := 1; i < len(r.Command); i++ {
		arg := r.Command[i]
		for _, flag := range []string{"--listen", "--host", "--port"} {
			v, at := "", -1
			switch {
			case arg == flag && i+1 < len(r.Command):
				v, at = r.Command[i+1], i+1
			case strings.HasPrefix(arg, flag+"="):
				v, at = strings.TrimPrefix(arg, flag+"="), i
			}
			if at < 0 {
				continue
			}
			where := fmt.Sprintf("command[%d] (%s)", at, flag)
			if flag == "--listen" {
				add("listen", where, v)
				if h, port, err := net.SplitHostPort(v); err == nil {
					add("host", where, h)
					add("port", where, port)
				}
			} else {
				add(strings.TrimPrefix(flag, "--"), where, v)
			}
		}
	}
	return facts
}

// checkServerAgreement refuses a workload whose effective_config.server states a listen address,
// host, port, base URL or model id that the launch recipe decides otherwise: the receipt records
// the workload's configuration, so it must be what ran. It names both places.
func (p *Plan) checkServerAgreement() error {
	if p.recipe == nil {
		return nil
	}
	server, ok := p.variant.EffectiveConfig["server"].(map[string]any)
	if !ok {
		return nil
	}
	facts := p.recipeFacts()
	keys := make([]string, 0, len(facts))
	for k := range facts {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var problems []string
	for _, key := range keys {
		raw, ok := server[key]
		if !ok {
			continue
		}
		stated, ok := factString(raw)
		if !ok {
			problems = append(problems, fmt.Sprintf("variants/%s/effective_config/server/%s is %v, not a string or integer the launch recipe %s can be compared with", p.variant.ID, key, raw, p.recipeRel))
			continue
		}
		if key == "base_url" {
			stated = strings.TrimRight(stated, "/")
		}
		for _, f := range facts[key] {
			if f.value != stated {
				problems = append(problems, fmt.Sprintf("workload %s variants/%s/effective_config/server/%s says %q but launch recipe %s %s says %q", p.workloadRel, p.variant.ID, key, stated, p.recipeRel, f.where, f.value))
			}
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: %s; make them agree (the receipt records the workload's effective_config, so it must be what the recipe starts)", ErrWorkload, strings.Join(problems, "; "))
	}
	return nil
}

// factString renders a stated value for comparison: a string as is, an integral number in
// decimal.
func factString(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case json.Number:
		if n, err := x.Int64(); err == nil {
			return strconv.FormatInt(n, 10), true
		}
	case float64:
		if x == float64(int64(x)) {
			return strconv.FormatInt(int64(x), 10), true
		}
	case int64:
		return strconv.FormatInt(x, 10), true
	case int:
		return strconv.Itoa(x), true
	}
	return "", false
}

// checkRowRequests refuses a serving case whose rows cannot reach their concurrency: each row
// sends requests (or, without it, the corpus size) measured requests, and a row of concurrency c
// needs at least c of them to ever have c in flight.
func (p *Plan) checkRowRequests() error {
	for i, c := range p.variant.Cases {
		if c.Kind != contract.CaseKindServing || len(c.Concurrency) == 0 || c.Schedule != nil || (c.Corpus != nil && c.Corpus.Source == contract.CorpusSourceTrace) {
			continue // a schedule's arrivals (a trace's entries) are its row size; its concurrency caps the in-flight count
		}
		maxC := slices.Max(c.Concurrency)
		if c.CapacitySearch != nil { // a capacity search probes up to its max
			maxC = max(maxC, c.CapacitySearch.Max)
		}
		n, what := int64(len(p.prompts[c.ID])), "its corpus has"
		field := "corpus" // not a contract value: the workload field the error names
		if c.Requests != nil {
			n, what, field = *c.Requests, "requests is", "requests"
		}
		if n < maxC {
			return fmt.Errorf("%w: case %s (variants/%s/cases/%d/%s): %s %d, fewer than its concurrency %d, so that row can never have %d requests in flight; set requests to at least %d (the corpus cycles)", ErrWorkload, c.ID, p.variant.ID, i, field, what, n, maxC, maxC, maxC)
		}
	}
	return nil
}
