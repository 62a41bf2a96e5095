package pyruntime

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/qualkit/qualkit/runner/artifact"
	"github.com/qualkit/qualkit/schemas"
	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/evidence"
)

// Limits on what the interpreter and the installed metadata may make Capture read.
const (
	// probeTimeout bounds the interpreter run.
	probeTimeout = 30 * time.Second
	// maxProbeOutput bounds the interpreter's stdout (and, separately, stderr).
	maxProbeOutput = 4 << 20
	// maxMetadataHeader bounds the header block read from one METADATA / PKG-INFO file.
	maxMetadataHeader = 1 << 20
	// maxPackages bounds the distributions of one runtime (the contract's limit).
	maxPackages = 100000
)

// Sentinel errors.
var (
	// ErrInvalidID: the manifest id is not a portable id (common.#PortableID).
	ErrInvalidID = errors.New("invalid runtime manifest id")
	// ErrInterpreter: the interpreter could not be run, or its answer was not understood.
	ErrInterpreter = errors.New("cannot probe interpreter")
	// ErrInvalid: the manifest built does not validate against its contract.
	ErrInvalid = errors.New("invalid runtime manifest")
)

// portableID mirrors common.#PortableID; the final schema check guards against drift.
var portableID = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{2,127}$`)

// probeMarker prefixes the probe's answer, so that anything a sitecustomize prints is ignored.
const probeMarker = "QUALKIT-RUNTIME-PROBE "

// probeScript prints the interpreter's version, executable and sys.path as one JSON line.
const probeScript = `import json, platform, sys
print(` + "\"" + probeMarker + "\"" + ` + json.dumps({"version": platform.python_version(), "executable": sys.executable or "", "path": [p for p in sys.path if isinstance(p, str)]}))
`

type probe struct {
	Version    string   `json:"version"`
	Executable string   `json:"executable"`
	Path       []string `json:"path"`
}

// Capture runs the interpreter python (an argv vector: `python -I -c <probe>`, closed empty
// environment, working directory /, stdin closed, at most 30 s) to read its version and sys.path;
// hashes the interpreter executable (sys.executable with symlinks resolved, so a venv link or a
// version-manager shim binds the real interpreter; python itself when that is unknown); reads
// every distribution under the sys.path entries named site-packages or dist-packages
// (*.dist-info/METADATA, and *.egg-info PKG-INFO for distutils-era installs), keeping the first
// of each normalised name in sys.path order; and hashes launchImpl, when given, into
// launch_implementation. The returned manifest has passed schemas.CheckDocument.
func Capture(ctx context.Context, python, id, launchImpl string) (*contract.RuntimeManifestDoc, error) {
	if !portableID.MatchString(id) {
		return nil, fmt.Errorf("%w %q: want ^[a-z0-9][a-z0-9._-]{2,127}$", ErrInvalidID, id)
	}
	if python == "" {
		return nil, fmt.Errorf("%w: no interpreter path", ErrInterpreter)
	}
	run, err := resolve(python)
	if err != nil {
		return nil, err
	}
	p, err := runProbe(ctx, python, run)
	if err != nil {
		return nil, err
	}
	exe, err := interpreterFile(python, run, p.Executable)
	if err != nil {
		return nil, err
	}
	toHash := []artifact.File{{Kind: "interpreter", Path: python, Abs: exe}}
	if launchImpl != "" {
		real, err := filepath.EvalSymlinks(launchImpl)
		if err != nil {
			return nil, fmt.Errorf("hash launch implementation %s: %w", launchImpl, err)
		}
		toHash = append(toHash, artifact.File{Kind: "launch implementation", Path: launchImpl, Abs: real})
	}
	hashed, err := artifact.Hash(ctx, toHash)
	if err != nil {
		return nil, err
	}
	pkgs, err := Distributions(SiteDirs(p.Path))
	if err != nil {
		return nil, err
	}
	doc := &contract.RuntimeManifestDoc{
		Schema:    contract.RuntimeManifestSchema,
		ID:        id,
		CreatedAt: time.Now().UTC().Format("2006-01-02T15:04:05.000Z"),
		Interpreter: contract.Interpreter{
			Kind:    "python",
			Path:    python,
			Version: p.Version,
			Digest:  hashed[0].Digest,
		},
		Packages: pkgs,
	}
	if launchImpl != "" {
		doc.LaunchImplementation = &contract.Implementation{Path: launchImpl, Digest: hashed[1].Digest}
	}
	if err := Check(doc); err != nil {
		return nil, err
	}
	return doc, nil
}

// Check validates a manifest against its contract (schemas.CheckDocument on its JSON form).
func Check(doc *contract.RuntimeManifestDoc) error {
	data, err := json.Marshal(doc)
	if err != nil {
		return fmt.Errorf("encode runtime manifest: %w", err)
	}
	out, err := schemas.CheckDocument(data)
	if err != nil {
		return fmt.Errorf("check runtime manifest: %w", err)
	}
	if !out.Valid() {
		msgs := make([]string, len(out.Violations))
		for i, v := range out.Violations {
			msgs[i] = v.Error()
		}
		return fmt.Errorf("%w: %s", ErrInvalid, strings.Join(msgs, "; "))
	}
	return nil
}

// runProbe runs the interpreter once and parses its answer.
// resolve returns the absolute path to run for python: a name without a slash is looked up on
// PATH, a relative path is made absolute (the probe runs in /).
func resolve(python string) (string, error) {
	p := python
	if !strings.Contains(python, "/") {
		lp, err := exec.LookPath(python)
		if err != nil {
			return "", fmt.Errorf("%w %s: %w", ErrInterpreter, python, err)
		}
		p = lp
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", fmt.Errorf("%w %s: %w", ErrInterpreter, python, err)
	}
	return abs, nil
}

func runProbe(parent context.Context, python, run string) (*probe, error) {
	ctx, cancel := context.WithTimeout(parent, probeTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, run, "-I", "-c", probeScript)
	cmd.Env = []string{}
	cmd.Dir = "/"
	stdout := &capped{max: maxProbeOutput}
	stderr := &capped{max: maxProbeOutput}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 2 * time.Second
	err := cmd.Run()
	if perr := parent.Err(); perr != nil {
		return nil, fmt.Errorf("%w %s: %w", ErrInterpreter, python, perr)
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("%w %s: no answer within %s", ErrInterpreter, python, probeTimeout)
	}
	if err != nil {
		msg := strings.TrimSpace(stderr.buf.String())
		if len(msg) > 512 {
			msg = msg[len(msg)-512:]
		}
		if msg != "" {
			return nil, fmt.Errorf("%w %s: %w: %s", ErrInterpreter, python, err, msg)
		}
		return nil, fmt.Errorf("%w %s: %w", ErrInterpreter, python, err)
	}
	if stdout.over {
		return nil, fmt.Errorf("%w %s: more than %d bytes of output", ErrInterpreter, python, maxProbeOutput)
	}
	var line string
	sc := bufio.NewScanner(bytes.NewReader(stdout.buf.Bytes()))
	sc.Buffer(make([]byte, 64<<10), maxProbeOutput)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), probeMarker); ok {
			line = rest
		}
	}
	if line == "" {
		return nil, fmt.Errorf("%w %s: no probe answer on stdout (is it a Python interpreter?)", ErrInterpreter, python)
	}
	var p probe
	if err := json.Unmarshal([]byte(line), &p); err != nil {
		return nil, fmt.Errorf("%w %s: probe answer: %w", ErrInterpreter, python, err)
	}
	if p.Version == "" {
		return nil, fmt.Errorf("%w %s: empty version", ErrInterpreter, python)
	}
	return &p, nil
}

// interpreterFile is the file whose bytes identify the interpreter: sys.executable with symlinks
// resolved, or the program that was run when the interpreter did not say.
func interpreterFile(python, run, executable string) (string, error) {
	p := executable
	if p == "" || !filepath.IsAbs(p) {
		p = run
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", fmt.Errorf("%w %s: resolve executable %s: %w", ErrInterpreter, python, p, err)
	}
	return real, nil
}

// capped is an io.Writer that keeps at most max bytes and remembers whether more came.
type capped struct {
	buf  bytes.Buffer
	max  int
	over bool
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.max - c.buf.Len(); room < len(p) {
		c.over = true
		if room > 0 {
			c.buf.Write(p[:room])
		}
		return len(p), nil
	}
	return c.buf.Write(p)
}

// SiteDirs returns the entries of a sys.path that are site-packages or dist-packages
// directories, in order, without duplicates (after resolving symlinks); missing ones are dropped.
func SiteDirs(sysPath []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, p := range sysPath {
		if !filepath.IsAbs(p) {
			continue
		}
		if b := filepath.Base(p); b != "site-packages" && b != "dist-packages" {
			continue
		}
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			continue
		}
		if st, err := os.Stat(real); err != nil || !st.IsDir() || seen[real] {
			continue
		}
		seen[real] = true
		out = append(out, real)
	}
	return out
}

var nameRun = regexp.MustCompile(`[-_.]+`)

// NormalizeName is the PEP 503 normalised form of a distribution name: lower case, with every
// run of "-", "_" and "." replaced by one "-".
func NormalizeName(name string) string {
	return strings.ToLower(nameRun.ReplaceAllString(name, "-"))
}

// Distributions reads the distributions installed in dirs (searched in order; the first of each
// normalised name wins, as for importlib.metadata) and returns them sorted by normalised name.
// A *.dist-info directory contributes Name and Version from METADATA and, when present, the
// digest of its RECORD file; a *.egg-info directory or file contributes Name and Version from
// PKG-INFO and no digest. Entries whose names start with "." or "~" (pip's leftovers) are skipped.
func Distributions(dirs []string) ([]contract.Package, error) {
	byName := map[string]contract.Package{}
	for _, dir := range dirs {
		ents, err := os.ReadDir(dir)
		if err != nil {
			return nil, fmt.Errorf("read site directory %s: %w", dir, err)
		}
		for _, e := range ents {
			n := e.Name()
			if strings.HasPrefix(n, ".") || strings.HasPrefix(n, "~") {
				continue
			}
			var meta, record string
			switch {
			case strings.HasSuffix(n, ".dist-info") && e.IsDir():
				meta = filepath.Join(dir, n, "METADATA")
				record = filepath.Join(dir, n, "RECORD")
			case strings.HasSuffix(n, ".egg-info") && e.IsDir():
				meta = filepath.Join(dir, n, "PKG-INFO")
			case strings.HasSuffix(n, ".egg-info") && e.Type().IsRegular():
				meta = filepath.Join(dir, n)
			default:
				continue
			}
			name, version, err := readMetadata(meta)
			if err != nil {
				return nil, err
			}
			key := NormalizeName(name)
			if _, dup := byName[key]; dup {
				continue
			}
			if utf8.RuneCountInString(key) > 256 || utf8.RuneCountInString(version) > 128 {
				return nil, fmt.Errorf("read %s: name or version too long", meta)
			}
			pkg := contract.Package{Name: key, Version: version}
			if record != "" {
				d, _, err := evidence.DigestFile(record)
				switch {
				case err == nil:
					pkg.Digest = d
				case !errors.Is(err, os.ErrNotExist):
					return nil, fmt.Errorf("hash %s: %w", record, err)
				}
			}
			if len(byName) == maxPackages {
				return nil, fmt.Errorf("read site directories: more than %d distributions", maxPackages)
			}
			byName[key] = pkg
		}
	}
	out := make([]contract.Package, 0, len(byName))
	for _, p := range byName {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// readMetadata reads Name and Version from the header block of a core-metadata file (RFC 822
// style: "Key: value" lines up to the first empty line).
func readMetadata(path string) (name, version string, err error) {
	f, _, err := evidence.OpenRegular(path, -1)
	if err != nil {
		return "", "", fmt.Errorf("read distribution metadata %s: %w", path, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(io.LimitReader(f, maxMetadataHeader))
	sc.Buffer(make([]byte, 64<<10), maxMetadataHeader)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		if line == "" {
			break
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok || strings.HasPrefix(line, " ") || strings.HasPrefix(line, "\t") {
			continue
		}
		switch strings.ToLower(strings.TrimSpace(k)) {
		case "name":
			if name == "" {
				name = strings.TrimSpace(v)
			}
		case "version":
			if version == "" {
				version = strings.TrimSpace(v)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return "", "", fmt.Errorf("read distribution metadata %s: %w", path, err)
	}
	if name == "" || version == "" {
		return "", "", fmt.Errorf("read distribution metadata %s: missing Name or Version", path)
	}
	return name, version, nil
}
