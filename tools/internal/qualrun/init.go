package qualrun

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/qualkit/qualkit/runner/campaign"
	"github.com/qualkit/qualkit/runner/source"
	"github.com/qualkit/qualkit/schemas"
	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/evidence"
	"github.com/qualkit/qualkit/tools/internal/cliapp"
	"github.com/qualkit/qualkit/tools/internal/exitcode"
	"github.com/urfave/cli/v2"
)

// Defaults of qualrun init (docs/qualrun.md, "Scaffolding a campaign").
const (
	initStartupTimeoutSeconds  = 120
	initShutdownTimeoutSeconds = 30
	initPollIntervalMs         = 200
	initProbeTimeoutMs         = 2000
	initMaxTokens              = 32
	initRequestTimeoutSeconds  = 60
	initCaseTimeoutSeconds     = 600
	initVariant                = "default"
	// initPortToken in the command (or an --env value) is replaced by the chosen port.
	initPortToken = "{port}"
)

// initPrompts are the inline corpus qualrun init writes: short, varied, deterministic.
var initPrompts = []contract.Prompt{
	{ID: "p-greeting", Text: "Say hello in one short sentence."},
	{ID: "p-count", Text: "Count from one to ten, separated by commas."},
	{ID: "p-explain", Text: "Explain in two sentences what a benchmark is."},
	{ID: "p-list", Text: "List three colours of the rainbow."},
}

var initNamePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{2,63}$`)

func initCommand() *cli.Command {
	return &cli.Command{
		Name:      "init",
		Usage:     "scaffold a serving campaign: a launch recipe and a workload for your server (-- CMD ARGS...)",
		ArgsUsage: "-- CMD [ARGS...]",
		Description: "Writes workloads/NAME.json (a serving workload) and workloads/launch/NAME.json (the launch recipe of\n" +
			"CMD ARGS) below the repository root, validated against their contracts, and prints the commands that\n" +
			"commit and run them. It picks a free loopback port (or --port): every {port} in ARGS and --env values\n" +
			"becomes it, and base_url is http://127.0.0.1:PORT. Readiness, timeouts and rows use the documented\n" +
			"defaults (docs/qualrun.md); each row has at least as many requests as its concurrency. Existing files are\n" +
			"never replaced. Exit 0: written; 2: usage (a bad name, an existing file, no command).",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "name", Usage: "campaign `NAME`: the workload id and file names (lower case, 3-64 characters)"},
			&cli.StringFlag{Name: "model-id", Usage: "model `ID` the server lists on GET /v1/models and requests name"},
			&cli.IntFlag{Name: "port", Usage: "loopback `PORT` the server listens on (default: a free one)"},
			&cli.StringSliceFlag{Name: "env", Usage: "server environment `NAME=VALUE` (repeatable; {port} is replaced)"},
			&cli.StringFlag{Name: "backend", Value: string(contract.BackendCPU), Usage: "`BACKEND` of the variant: cpu, cuda, rocm, vulkan or metal"},
			&cli.StringFlag{Name: "concurrency", Value: "1,4", Usage: "comma-separated closed-loop `LIST` of row concurrencies"},
			&cli.StringFlag{Name: "host-id", Usage: "host `ID` the printed run command uses (default: from the host name)"},
		},
		Action: func(c *cli.Context) error {
			cfg, err := initConfigFrom(c)
			if err != nil {
				return err
			}
			return runInit(cfg, c.App.Writer)
		},
	}
}

type initConfig struct {
	name, modelID, hostID string
	backend               contract.Backend
	port                  int
	command               []string
	env                   map[string]string
	concurrency           []int64
	dir                   string // where the repository root is looked for
}

func initConfigFrom(c *cli.Context) (initConfig, error) {
	cfg := initConfig{name: c.String("name"), modelID: c.String("model-id"), backend: contract.Backend(c.String("backend")), port: c.Int("port"),
		command: c.Args().Slice(), env: map[string]string{}, hostID: c.String("host-id"), dir: "."}
	switch {
	case cfg.name == "":
		return cfg, fmt.Errorf("%w: init needs --name NAME (the campaign's id, e.g. mybench)", exitcode.ErrUsage)
	case !initNamePattern.MatchString(cfg.name):
		return cfg, fmt.Errorf("%w: --name %q must match %s (lower-case letters, digits, '.', '_' or '-')", exitcode.ErrUsage, cfg.name, initNamePattern)
	case cfg.modelID == "":
		return cfg, fmt.Errorf("%w: init needs --model-id ID (the id the server lists on GET /v1/models)", exitcode.ErrUsage)
	case len(cfg.command) == 0:
		return cfg, fmt.Errorf("%w: init needs the server's command after --, e.g. qualrun init --name mybench --model-id tiny -- ollama serve", exitcode.ErrUsage)
	case cfg.port < 0 || cfg.port > 65535:
		return cfg, fmt.Errorf("%w: --port %d: want 1 to 65535", exitcode.ErrUsage, cfg.port)
	}
	if !cfg.backend.Valid() {
		return cfg, fmt.Errorf("%w: --backend %q: want cpu, cuda, rocm, vulkan or metal", exitcode.ErrUsage, cfg.backend)
	}
	for _, e := range c.StringSlice("env") {
		k, v, ok := strings.Cut(e, "=")
		if !ok || k == "" {
			return cfg, fmt.Errorf("%w: --env %q: want NAME=VALUE", exitcode.ErrUsage, e)
		}
		cfg.env[k] = v
	}
	for _, f := range strings.Split(c.String("concurrency"), ",") {
		n, err := strconv.ParseInt(strings.TrimSpace(f), 10, 64)
		if err != nil || n < 1 || n > 4096 || slices.Contains(cfg.concurrency, n) {
			return cfg, fmt.Errorf("%w: --concurrency %q: want distinct integers from 1 to 4096, comma-separated", exitcode.ErrUsage, c.String("concurrency"))
		}
		cfg.concurrency = append(cfg.concurrency, n)
	}
	if cfg.hostID == "" {
		cfg.hostID = defaultHostID()
	}
	if err := campaign.CheckHostID(cfg.hostID); err != nil {
		return cfg, fmt.Errorf("%w: %v", exitcode.ErrUsage, err)
	}
	return cfg, nil
}

// defaultHostID derives a host id from the host name (lower case, other characters as '-').
func defaultHostID() string {
	h, _ := os.Hostname()
	h = strings.ToLower(h)
	h = regexp.MustCompile(`[^a-z0-9._-]+`).ReplaceAllString(h, "-")
	h = strings.Trim(h, "-._")
	if len(h) > 64 {
		h = h[:64]
	}
	if campaign.CheckHostID(h) != nil {
		return "my-host"
	}
	return h
}

// freeLoopbackPort asks the kernel for a free port on 127.0.0.1. The port is free now; the run
// checks again before launch that nothing listens on it.
func freeLoopbackPort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func runInit(cfg initConfig, stdout io.Writer) error {
	root, err := source.Root(cfg.dir)
	if err != nil {
		return fmt.Errorf("%w: init writes into the git repository you will qualify: %v", exitcode.ErrUsage, err)
	}
	workloadRel := path.Join("workloads", cfg.name+".json")
	recipeRel := path.Join("workloads", "launch", cfg.name+".json")
	for _, rel := range []string{workloadRel, recipeRel} {
		if _, err := os.Lstat(filepath.Join(root, rel)); err == nil {
			return fmt.Errorf("%w: %s already exists; init never replaces a file (choose another --name or remove it)", exitcode.ErrUsage, rel)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%w: %s: %v", exitcode.ErrUsage, rel, err)
		}
		if err := evidence.CheckNoSymlink(root, path.Dir(rel)); err != nil {
			return fmt.Errorf("%w: %v", exitcode.ErrUsage, err)
		}
	}
	port := cfg.port
	if port == 0 {
		if port, err = freeLoopbackPort(); err != nil {
			return fmt.Errorf("choose a free loopback port: %w (give --port)", err)
		}
	}
	ps := strconv.Itoa(port)
	cmd := make([]string, len(cfg.command))
	mentions := false
	for i, a := range cfg.command {
		mentions = mentions || strings.Contains(a, initPortToken)
		cmd[i] = strings.ReplaceAll(a, initPortToken, ps)
	}
	env := map[string]string{}
	for k, v := range cfg.env {
		mentions = mentions || strings.Contains(v, initPortToken)
		env[k] = strings.ReplaceAll(v, initPortToken, ps)
	}
	recipe := contract.LaunchRecipeDoc{
		Schema: contract.LaunchRecipeSchema, ID: cfg.name + "-server",
		Description: "The server of campaign " + cfg.name + " (written by qualrun init).",
		Command:     cmd, WorkingDirectory: "../..", Environment: env, EnvironmentPassthrough: []string{"HOME", "PATH"},
		BaseURL: "http://127.0.0.1:" + ps, ModelID: cfg.modelID,
		Readiness:             contract.Readiness{Path: "/v1/models", PollIntervalMs: initPollIntervalMs, ProbeTimeoutMs: initProbeTimeoutMs},
		StartupTimeoutSeconds: initStartupTimeoutSeconds, ShutdownTimeoutSeconds: initShutdownTimeoutSeconds,
		AcceptableExitCodes: []int64{0}, Isolation: contract.Isolation{CgroupAccounting: contract.IsolationCgroupAccountingPreferred},
	}
	maxC := slices.Max(cfg.concurrency)
	requests := max(2*maxC, int64(len(initPrompts)))
	seed := int64(1)
	device, skip := contract.VariantDeviceRequirementNone, contract.VariantSkipPolicyAllow
	if cfg.backend != contract.BackendCPU {
		device, skip = contract.VariantDeviceRequirementRequired, contract.VariantSkipPolicyFail
	}
	w := contract.WorkloadDoc{
		Schema: contract.WorkloadSchema, ID: cfg.name, Kind: contract.KindServing,
		Description: "Serving campaign " + cfg.name + " against model " + cfg.modelID + " (written by qualrun init; edit and commit).",
		Determinism: contract.Determinism{Seed: &seed, SeedDelivery: contract.DeterminismSeedDeliveryNotApplicable, Repetitions: 1, CaseOrder: contract.DeterminismCaseOrder, MaxParallelCases: 1,
			NetworkAccess: contract.DeterminismNetworkAccessLoopback},
		Variables: []contract.Variable{},
		Variants: []contract.Variant{{
			ID: initVariant, Description: "The server as launched by " + recipeRel + ".", Backend: cfg.backend,
			DeviceRequirement: device, SkipPolicy: skip, EffectiveConfig: contract.Config{},
			Cases: []contract.Case{{
				Kind: contract.CaseKindServing, ID: "chat", Description: "Streaming chat at each concurrency; the corpus cycles to fill every row.",
				Required: true, Launch: recipeRel, API: contract.ServingCaseAPIChat, Stream: true,
				Corpus:      &contract.Corpus{Source: contract.CorpusSourceInline, Prompts: initPrompts},
				Concurrency: cfg.concurrency, Repetitions: 1, Requests: &requests, WarmupRequests: 1, MaxTokens: initMaxTokens,
				Sampling:              &contract.Sampling{Temperature: 0, Seed: &seed},
				RequestTimeoutSeconds: initRequestTimeoutSeconds, TimeoutSeconds: initCaseTimeoutSeconds,
				SLO: &contract.SLO{}, OutputAssertions: []contract.OutputAssertion{},
			}},
		}},
		ComparisonPolicy: &contract.ComparisonPolicy{Mode: contract.ComparisonPolicyModeSameEnvironmentPerformance, VariantPairs: []contract.VariantPair{},
			BackendPairs: []contract.BackendPair{}, MetricRules: []contract.MetricRule{}},
	}
	recipeDoc, err := indentJSON(recipe)
	if err != nil {
		return err
	}
	workloadDoc, err := indentJSON(w)
	if err != nil {
		return err
	}
	if err := schemas.CheckAs(recipeDoc, recipeRel, contract.LaunchRecipe); err != nil {
		return fmt.Errorf("%w: the launch recipe init would write is not valid:\n%v", exitcode.ErrUsage, err)
	}
	if err := schemas.CheckAs(workloadDoc, workloadRel, contract.Workload); err != nil {
		return fmt.Errorf("%w: the workload init would write is not valid:\n%v", exitcode.ErrUsage, err)
	}
	for _, f := range []struct {
		rel string
		b   []byte
	}{{recipeRel, recipeDoc}, {workloadRel, workloadDoc}} {
		abs := filepath.Join(root, filepath.FromSlash(f.rel))
		if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
			return err
		}
		if err := evidence.WriteNew(abs, f.b, 0o644); err != nil {
			return err
		}
	}
	cliapp.Fprintf(stdout, "wrote %s (valid qualkit.launch-recipe.v1: %s, base_url %s, model %s)\n", recipeRel, strings.Join(cmd, " "), recipe.BaseURL, cfg.modelID)
	cliapp.Fprintf(stdout, "wrote %s (valid qualkit.workload.v1: concurrency %s, %d requests per row)\n", workloadRel, joinInts(cfg.concurrency), requests)
	if !mentions {
		cliapp.Fprintf(stdout, "note: the command does not mention %s: make sure the server listens on 127.0.0.1:%d (base_url), or run init again with %s in its arguments or an --env value\n", initPortToken, port, initPortToken)
	}
	cliapp.Fprintf(stdout, "next, from the repository root %s:\n", root)
	cliapp.Fprintf(stdout, "  git add %s %s && git commit -m \"qualkit: %s campaign\"\n", workloadRel, recipeRel, cfg.name)
	cliapp.Fprintf(stdout, "  qualrun run %s --variant %s --host-id %s --output qualification/receipts/%s/%s/%s-1.json\n",
		workloadRel, initVariant, cfg.hostID, cfg.backend, cfg.hostID, cfg.name)
	return nil
}

func indentJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func joinInts(xs []int64) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.FormatInt(x, 10)
	}
	return strings.Join(s, ",")
}
