package contract

import (
	"regexp"
	"strings"
)

// Hand-written helpers on the contract types (the types themselves are generated).

// RunsSessions reports whether a workload case runs multi-turn sessions: its corpus is a
// conversations or synthetic conversations corpus (docs/caching.md "Conversations").
func (c *Case) RunsSessions() bool {
	return c != nil && c.Corpus != nil && (c.Corpus.Source == CorpusSourceConversations || c.Corpus.Source == CorpusSourceSyntheticConversations)
}

// DriverSpecOf returns the driver spec of a workload's driver case (Kind "driver"): the same
// fields without kind and required. The maps and slices are shared with c.
func DriverSpecOf(c Case) DriverSpecDoc {
	d := DriverSpecDoc{Schema: "qualkit." + DriverSpec, ID: c.ID, Description: c.Description, Contract: c.Contract,
		Environment: c.Environment, TimeoutSeconds: c.TimeoutSeconds, Tolerances: c.Tolerances}
	if c.Worker != nil {
		d.Worker = *c.Worker
	}
	if c.Request != nil {
		d.Request = *c.Request
	}
	if c.Model != nil {
		d.Model = *c.Model
	}
	if c.Isolation != nil {
		d.Isolation = *c.Isolation
	}
	if d.Environment == nil {
		d.Environment = map[string]string{}
	}
	if d.Tolerances == nil {
		d.Tolerances = []DriverTolerance{}
	}
	if d.Worker.Args == nil {
		d.Worker.Args = []string{}
	}
	return d
}

// DriverSourceOf is the source identity a driver result records: the receipt's source, without
// its tree hash format.
func DriverSourceOf(s Source) DriverSource {
	return DriverSource{Repository: s.Repository, Commit: s.Commit, OriginMain: s.OriginMain, Tree: s.Tree, TreeHash: s.TreeHash, Clean: s.Clean}
}

// TokenEnv names the variable that holds the recipe's bearer token, or "" when it declares none.
func (r *LaunchRecipeDoc) TokenEnv() string {
	if r == nil || r.Auth == nil {
		return ""
	}
	return r.Auth.TokenEnv
}

// RedactsEnv reports whether the value of the server's environment variable name may be recorded
// only as a digest (and is scrubbed from evidence): a secret-looking name (LooksSecret), the
// variable that holds the recipe's bearer token, or a name declared in secret_environment,
// whatever its name.
func (r *LaunchRecipeDoc) RedactsEnv(name string) bool {
	if LooksSecret(name) || (r.TokenEnv() != "" && name == r.TokenEnv()) {
		return true
	}
	for _, n := range r.SecretEnvironment {
		if n == name {
			return true
		}
	}
	return false
}

// secretName matches environment variable names whose values must never enter evidence.
var secretName = regexp.MustCompile(`TOKEN|KEY|SECRET|PASSWORD|PASSWD|CREDENTIAL|COOKIE|AUTH`)

// LooksSecret reports whether an environment variable name looks like it holds a secret.
func LooksSecret(name string) bool { return secretName.MatchString(strings.ToUpper(name)) }
