package campaign

import (
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/qualkit/qualkit/runner/artifact"
	"github.com/qualkit/qualkit/schemas/contract"
)

// launchFiles are the files inside the repository that the launch recipe's argv or environment
// names (a server config, a chat template, a file of flags): each is bound by digest as a
// config_file, so the receipt says which bytes the server read and the end check sees a change.
// An element names a file when it, or what follows the first "=" in it (--config=FILE,
// NAME=FILE), resolves (relative to the server's working directory) to a regular file inside
// the repository. Values of redacted variables are never looked at.
func (p *Plan) launchFiles(r *contract.LaunchRecipeDoc, workDir string) []artifact.File {
	var cands []string
	add := func(v string) {
		cands = append(cands, v)
		if _, after, ok := strings.Cut(v, "="); ok {
			cands = append(cands, after)
		}
	}
	for _, a := range r.Command[1:] {
		add(a)
	}
	for k, v := range r.Environment {
		if !r.RedactsEnv(k) {
			add(v)
		}
	}
	for _, k := range r.EnvironmentPassthrough {
		if v, ok := os.LookupEnv(k); ok && !r.RedactsEnv(k) {
			add(v)
		}
	}
	have := map[string]bool{}
	for _, f := range p.files {
		have[f.Path] = true
	}
	var out []artifact.File
	for _, c := range cands {
		if c == "" || strings.ContainsRune(c, 0) || len(c) > 4096 {
			continue
		}
		path := c
		if !filepath.IsAbs(path) {
			path = filepath.Join(workDir, path)
		}
		real, err := filepath.EvalSymlinks(path)
		if err != nil {
			continue
		}
		st, err := os.Stat(real)
		if err != nil || !st.Mode().IsRegular() {
			continue
		}
		rel, err := relTo(p.root, real)
		if err != nil || rel == ".git" || strings.HasPrefix(rel, ".git/") || have[rel] {
			continue
		}
		have[rel] = true
		out = append(out, artifact.File{Kind: contract.ArtifactKindConfigFile, Path: rel, Abs: real})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}
