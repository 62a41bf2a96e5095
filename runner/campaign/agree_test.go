package campaign

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/qualkit/qualkit/schemas/contract"
)

// TestServerAgreement: each value the workload states about the server is compared with every
// place the launch recipe decides it (base_url, model_id, --listen/--host/--port in either form);
// numbers compare as decimal integers.
func TestServerAgreement(t *testing.T) {
	recipe := &contract.LaunchRecipeDoc{BaseURL: "http://127.0.0.1:8000/", ModelID: "m",
		Command: []string{"server", "--host", "127.0.0.1", "--port=8000", "--model", "m"}}
	for _, tc := range []struct {
		server string
		want   []string // "" = accepted
	}{
		{`{"port": 8000, "host": "127.0.0.1", "model_id": "m", "base_url": "http://127.0.0.1:8000"}`, nil},
		{`{"listen": "127.0.0.1:8000", "engine": "x", "model": "/models/m.gguf"}`, nil},
		{`{"port": 8001}`, []string{`server/port says "8001" but launch recipe r.json base_url says "8000"`, `command[3] (--port) says "8000"`}},
		{`{"port": "8000"}`, nil},
		{`{"host": "localhost"}`, []string{`server/host says "localhost" but launch recipe r.json base_url says "127.0.0.1"`, `command[2] (--host) says "127.0.0.1"`}},
		{`{"model_id": "other"}`, []string{`server/model_id says "other" but launch recipe r.json model_id says "m"`}},
		{`{"port": 8000.5}`, []string{"not a string or integer"}},
	} {
		var server map[string]any
		d := json.NewDecoder(strings.NewReader(tc.server))
		d.UseNumber()
		if err := d.Decode(&server); err != nil {
			t.Fatal(err)
		}
		p := &Plan{recipe: recipe, recipeRel: "r.json", workloadRel: "w.json",
			variant: &contract.Variant{ID: "v", EffectiveConfig: contract.Config{"server": server}}}
		err := p.checkServerAgreement()
		if len(tc.want) == 0 {
			if err != nil {
				t.Errorf("%s: %v", tc.server, err)
			}
			continue
		}
		if !errors.Is(err, ErrWorkload) {
			t.Errorf("%s: %v, want ErrWorkload", tc.server, err)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v lacks %q", tc.server, err, w)
			}
		}
	}
}
