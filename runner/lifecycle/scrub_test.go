package lifecycle

import (
	"errors"
	"reflect"
	"testing"

	"github.com/qualkit/qualkit/runner/redact"
	"github.com/qualkit/qualkit/schemas/contract"
)

// TestSecrets: the values scrubbed for a recipe are those of every redacted variable (a
// secret-looking name, a declared secret_environment name, the token variable) and the bearer
// token itself, never a plain variable; the lifecycle record redacts exactly the same names.
func TestSecrets(t *testing.T) {
	r := &contract.LaunchRecipeDoc{
		Environment:            map[string]string{"MODE": "plain-value"},
		EnvironmentPassthrough: []string{"HF_TOKEN", "MIRROR_ACCESS", "PATH", "UNSET_KEY"},
		SecretEnvironment:      []string{"MIRROR_ACCESS"},
		Auth:                   &contract.Auth{Scheme: "bearer", TokenEnv: "QK_BEARER"},
	}
	env := map[string]string{"HF_TOKEN": "hf_value-123456", "MIRROR_ACCESS": "mirror-credential", "PATH": "/usr/bin", "QK_BEARER": "bearer-value-789"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	got := Secrets(r, lookup)
	want := []redact.Secret{{Name: "HF_TOKEN", Value: "hf_value-123456"}, {Name: "MIRROR_ACCESS", Value: "mirror-credential"}, {Name: "QK_BEARER", Value: "bearer-value-789"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Secrets = %v, want %v", got, want)
	}
	_, entries := environment(r, lookup)
	for _, e := range entries {
		if e.Redacted != (e.Name == "HF_TOKEN" || e.Name == "MIRROR_ACCESS") {
			t.Errorf("entry %s redacted=%v", e.Name, e.Redacted)
		}
	}
	env["MIRROR_ACCESS"] = "short"
	if err := CheckSecrets(Secrets(r, lookup)); !errors.Is(err, redact.ErrTooShort) {
		t.Errorf("CheckSecrets with a 5-byte secret = %v", err)
	}
}
