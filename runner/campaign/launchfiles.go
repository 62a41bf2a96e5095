package campaign

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"github.com/qualkit/qualkit/runner/artifact"
	"github.com/qualkit/qualkit/runner/source"
	"github.com/qualkit/qualkit/schemas/contract"
)

// launchFiles are the files inside the repository that the launch recipe's argv or environment
// names (a server config, a chat template, a file of flags): each is bound by digest as a
// config_file, so the receipt says which bytes the server read and the end check sees a change.
// An element names a file when it, or what follows the first "=" in it (--config=FILE,
// NAME=FILE), resolves (relative to the server's working directory) to a regular file inside
// the repository. Values of redacted variables are never looked at.
//
// A named file that is secret is not bound by content (no digest, never published): one that is
// not tracked in the commit that runs (gitignored, such as a private key or a token file, or
// merely untracked) or that holds the value of a redacted variable. It is returned in secret, by
// path and reason, for the effective run configuration to record that it was used.
func (p *Plan) launchFiles(ctx context.Context, r *contract.LaunchRecipeDoc, workDir string) (bound []artifact.File, secret []contract.EffectiveRunSecretFile) {
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
		if why, ok := p.secretFile(ctx, rel, real); ok {
			secret = append(secret, contract.EffectiveRunSecretFile{Path: rel, Reason: why})
			continue
		}
		bound = append(bound, artifact.File{Kind: contract.ArtifactKindConfigFile, Path: rel, Abs: real})
	}
	sort.Slice(bound, func(i, j int) bool { return bound[i].Path < bound[j].Path })
	sort.Slice(secret, func(i, j int) bool { return secret[i].Path < secret[j].Path })
	return bound, secret
}

// secretFile says whether the repository file rel (at real) is secret, and why: not tracked in
// HEAD (gitignored when git check-ignore matches it, else untracked), or holding the value of a
// variable the recipe redacts. It fails closed: a file whose state or contents cannot be
// established is secret.
func (p *Plan) secretFile(ctx context.Context, rel, real string) (contract.SecretFileReason, bool) {
	if err := source.CheckTracked(ctx, p.root, rel); err != nil && !errors.Is(err, source.ErrModified) {
		if gitIgnored(ctx, p.root, rel) {
			return contract.SecretFileReasonGitignored, true
		}
		return contract.SecretFileReasonUntracked, true
	}
	if !p.redactor.Empty() {
		if names, err := fileSecrets(real, p.redactor); err != nil || len(names) > 0 {
			return contract.SecretFileReasonHoldsRedactedValue, true
		}
	}
	return "", false
}

// gitIgnored reports whether git check-ignore matches rel in the repository at root (false when
// git cannot say: the file is secret as untracked then).
func gitIgnored(ctx context.Context, root, rel string) bool {
	cmd := exec.CommandContext(ctx, "git", "-C", root, "check-ignore", "-q", "--no-index", "--", rel)
	return cmd.Run() == nil
}

// secretFileNotes are the receipt's notes for the secret files the launch recipe names: each was
// used, and is neither bound by content nor published.
func secretFileNotes(files []contract.EffectiveRunSecretFile) []string {
	var out []string
	for _, f := range files {
		out = append(out, fmt.Sprintf("the launch recipe names %s, which is secret (%s): the server used it; it is not bound by content (no digest) and is never published",
			f.Path, strings.ReplaceAll(string(f.Reason), "_", " ")))
	}
	return out
}
