package source

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"github.com/go-git/go-billy/v5"
	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
)

// maxGitStderr bounds how much of git's stderr an error message quotes.
const maxGitStderr = 4 << 10

// status lists the paths that make the worktree at root unclean, with the backend that found them.
func status(ctx context.Context, r *git.Repository, root string, o options) ([]string, string, error) {
	if o.status != StatusGoGit {
		gitPath := o.git
		if gitPath == "" {
			gitPath = "git"
		}
		p, lookErr := exec.LookPath(gitPath)
		if lookErr == nil {
			dirty, err := gitStatus(ctx, p, root)
			if err == nil || o.status == StatusGit || ctx.Err() != nil {
				return dirty, "git", err
			}
		} else if o.status == StatusGit {
			return nil, "", fmt.Errorf("status of %s: %w", root, lookErr)
		}
	}
	dirty, err := goGitStatus(ctx, r, root)
	return dirty, "go-git", err
}

// gitStatus runs `git status --porcelain=v2 -z --untracked-files=all` in root. git honours every
// exclude source (.gitignore, .git/info/exclude, core.excludesFile) itself.
func gitStatus(ctx context.Context, gitPath, root string) ([]string, error) {
	// An fsmonitor hook or the untracked cache could answer for git; git status looks itself.
	cmd := exec.CommandContext(ctx, gitPath, "-C", root, "-c", "core.fsmonitor=false", "-c", "core.untrackedCache=false", "status", "--porcelain=v2", "-z",
		"--untracked-files=all", "--ignore-submodules=none", "--no-renames")
	cmd.Env = gitEnv(os.Environ())
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if len(msg) > maxGitStderr {
			msg = msg[:maxGitStderr] + "..."
		}
		if msg != "" {
			return nil, fmt.Errorf("git status in %s: %w: %s", root, err, msg)
		}
		return nil, fmt.Errorf("git status in %s: %w", root, err)
	}
	dirty, err := parsePorcelainV2(stdout.Bytes())
	if err != nil {
		return nil, fmt.Errorf("git status in %s: %w", root, err)
	}
	return dirty, nil
}

// gitEnv is env without the GIT_* variables that would point git at another repository, index
// or configuration (a hook environment, say); the rest (HOME, XDG_CONFIG_HOME) stays so that
// core.excludesFile is found as the user's own git would find it.
func gitEnv(env []string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if strings.HasPrefix(kv, "GIT_") {
			continue
		}
		out = append(out, kv)
	}
	return append(out, "GIT_TERMINAL_PROMPT=0")
}

// parsePorcelainV2 returns the sorted, unique paths of `git status --porcelain=v2 -z` output.
func parsePorcelainV2(out []byte) ([]string, error) {
	fields := bytes.Split(out, []byte{0})
	set := map[string]bool{}
	for i := 0; i < len(fields); i++ {
		rec := string(fields[i])
		if rec == "" {
			continue
		}
		var path string
		switch rec[0] {
		case '1': // 1 XY sub mH mI mW hH hI path
			path = nthField(rec, 8)
		case '2': // 2 XY sub mH mI mW hH hI Xscore path NUL origPath
			path = nthField(rec, 9)
			if i+1 < len(fields) && len(fields[i+1]) > 0 {
				i++
				set[string(fields[i])] = true
			}
		case 'u': // u XY sub m1 m2 m3 mW h1 h2 h3 path
			path = nthField(rec, 10)
		case '?': // ? path
			path = strings.TrimPrefix(rec, "? ")
		case '!', '#':
			continue
		default:
			return nil, fmt.Errorf("unexpected porcelain v2 record %q", rec)
		}
		if path == "" {
			return nil, fmt.Errorf("malformed porcelain v2 record %q", rec)
		}
		set[path] = true
	}
	return sortedKeys(set), nil
}

// nthField returns what follows the first n space-separated fields of rec (a path may hold spaces).
func nthField(rec string, n int) string {
	parts := strings.SplitN(rec, " ", n+1)
	if len(parts) != n+1 {
		return ""
	}
	return parts[n]
}

func sortedKeys(set map[string]bool) []string {
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// goGitStatus is the clean check with go-git alone. go-git reads .gitignore files itself; it does
// not read .git/info/exclude (v5.19: its worktree filesystem refuses paths under .git) nor any
// core.excludesFile, so those patterns are added here.
func goGitStatus(ctx context.Context, r *git.Repository, root string) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	wt, err := r.Worktree()
	if err != nil {
		return nil, fmt.Errorf("status of %s: %w", root, err)
	}
	extra, err := excludePatterns(r)
	if err != nil {
		return nil, fmt.Errorf("status of %s: %w", root, err)
	}
	wt.Excludes = append(wt.Excludes, extra...)
	st, err := wt.Status()
	if err != nil {
		return nil, fmt.Errorf("status of %s: %w", root, err)
	}
	set := map[string]bool{}
	for p, fs := range st {
		if fs.Staging == git.Unmodified && fs.Worktree == git.Unmodified {
			continue
		}
		set[p] = true
		if fs.Extra != "" {
			set[fs.Extra] = true
		}
	}
	return sortedKeys(set), ctx.Err()
}

// excludePatterns returns the exclude patterns git reads besides .gitignore files, in ascending
// priority: the system and global core.excludesFile (or $XDG_CONFIG_HOME/git/ignore when the
// global config names none), the repository's core.excludesFile, and .git/info/exclude.
func excludePatterns(r *git.Repository) ([]gitignore.Pattern, error) {
	rootFS := osfs.New("/")
	var ps []gitignore.Pattern
	if sys, err := gitignore.LoadSystemPatterns(rootFS); err == nil {
		ps = append(ps, sys...)
	}
	global, err := gitignore.LoadGlobalPatterns(rootFS)
	if err == nil && len(global) == 0 {
		global, err = readPatternFile(xdgIgnoreFile())
	}
	if err == nil {
		ps = append(ps, global...)
	}
	if cfg, err := r.Config(); err == nil && cfg.Raw != nil {
		if f := cfg.Raw.Section("core").Options.Get("excludesfile"); f != "" {
			if local, err := readPatternFile(expandHome(f)); err == nil {
				ps = append(ps, local...)
			}
		}
	}
	if s, ok := r.Storer.(interface{ Filesystem() billy.Filesystem }); ok {
		f, err := s.Filesystem().Open("info/exclude")
		switch {
		case err == nil:
			x, err := parsePatterns(f)
			f.Close()
			if err != nil {
				return nil, fmt.Errorf("read .git/info/exclude: %w", err)
			}
			ps = append(ps, x...)
		case !errors.Is(err, fs.ErrNotExist):
			return nil, fmt.Errorf("read .git/info/exclude: %w", err)
		}
	}
	return ps, nil
}

func xdgIgnoreFile() string {
	if d := os.Getenv("XDG_CONFIG_HOME"); d != "" {
		return filepath.Join(d, "git", "ignore")
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".config", "git", "ignore")
	}
	return ""
}

func expandHome(p string) string {
	if p == "~" || strings.HasPrefix(p, "~/") {
		if h, err := os.UserHomeDir(); err == nil {
			return filepath.Join(h, p[1:])
		}
	}
	return p
}

// readPatternFile reads an exclude file whose patterns apply from the worktree root; a missing
// file has no patterns.
func readPatternFile(path string) ([]gitignore.Pattern, error) {
	if path == "" {
		return nil, nil
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parsePatterns(f)
}

func parsePatterns(f interface{ Read([]byte) (int, error) }) ([]gitignore.Pattern, error) {
	var ps []gitignore.Pattern
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || strings.TrimSpace(line) == "" {
			continue
		}
		ps = append(ps, gitignore.ParsePattern(line, nil))
	}
	return ps, sc.Err()
}
