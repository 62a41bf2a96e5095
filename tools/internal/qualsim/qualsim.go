// Package qualsim is the qualsim command line: it turns flags into one runner/sim server, runs it
// until SIGTERM or SIGINT, and carries out the faults that belong to a process (ignoring
// SIGTERM, exiting mid-stream, leaving a setsid grandchild behind).
package qualsim

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/qualkit/qualkit/runner/sim"
	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/tools/internal/exitcode"
	"github.com/qualkit/qualkit/tools/internal/tokenize"
	"github.com/urfave/cli/v2"
)

// Version is set at build time with -ldflags "-X .../qualsim.Version=...".
var Version = "dev"

// DefaultListen is the address qualsim serves on without --listen.
const DefaultListen = "127.0.0.1:18080"

// Main runs qualsim with args (args[0] is the program name) and returns the exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	app := &cli.App{
		Name:  "qualsim",
		Usage: "serve a deterministic OpenAI-compatible model on loopback, with declared timing and faults",
		Description: "qualsim is qualkit's reference server: GET /v1/models, POST /v1/chat/completions and\n" +
			"/v1/completions (streamed or not), GET /health and GET /metrics, on a loopback address only.\n" +
			"Output tokens are five-digit numbers counting up from a hashed start, so outputs are exactly\n" +
			"reproducible. SIGTERM or SIGINT shuts it down gracefully (exit 0). See docs/qualsim.md.",
		Version:                   Version,
		Writer:                    stdout,
		ErrWriter:                 stderr,
		ExitErrHandler:            func(*cli.Context, error) {},
		DisableSliceFlagSeparator: true,
		OnUsageError: func(_ *cli.Context, err error, _ bool) error {
			return fmt.Errorf("%w: %v", exitcode.ErrUsage, err)
		},
		Flags:    serveFlags(),
		Commands: []*cli.Command{probeCommand(), grandchildCommand(), registryCommand(), sigstoreCommand()},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return fmt.Errorf("%w: unknown command %q (see qualsim --help)", exitcode.ErrUsage, c.Args().First())
			}
			return serve(c)
		},
	}
	for _, cmd := range app.Commands {
		cmd.OnUsageError = app.OnUsageError
	}
	err := app.Run(args)
	if err != nil {
		fmt.Fprintln(stderr, "qualsim:", err)
	}
	return exitcode.Code(err)
}

func faultUsage() string {
	var b strings.Builder
	b.WriteString("turn on a fault, `SPEC` = NAME[=VALUE][@EVENT] (repeatable; EVENT is the 1-based SSE event, default ")
	b.WriteString(strconv.Itoa(sim.DefaultFaultEvent))
	b.WriteString("):")
	for _, f := range sim.FaultCatalogue() {
		fmt.Fprintf(&b, "\n\t%s: %s", f.Syntax, f.Doc)
	}
	return b.String()
}

func serveFlags() []cli.Flag {
	d := sim.DefaultConfig()
	return []cli.Flag{
		&cli.StringFlag{Name: "listen", Value: DefaultListen, Usage: "serve on `HOST:PORT`, a loopback address (port 0 picks a free port; see --addr-file)"},
		&cli.StringSliceFlag{Name: "model", Value: cli.NewStringSlice(d.Models...), Usage: "declare a model `ID` (repeatable; the first --model replaces the default)"},
		&cli.StringFlag{Name: "config", Usage: "read the configuration from a JSON `FILE` (see docs/qualsim.md); flags given explicitly override it"},
		&cli.Uint64Flag{Name: "seed", Value: d.Seed, Usage: "model `SEED`, one input of every completion"},
		&cli.DurationFlag{Name: "startup-delay", Value: d.Timing.StartupDelay, Usage: "answer 503 on /v1/models, /health and completions for `DURATION` after start"},
		&cli.DurationFlag{Name: "ttft", Value: d.Timing.TTFT, Usage: "`DURATION` from decode-slot acquisition to the first token"},
		&cli.DurationFlag{Name: "prefill-per-token", Value: d.Timing.PrefillPerToken, Usage: "`DURATION` added to the TTFT per prompt token"},
		&cli.DurationFlag{Name: "token-interval", Value: d.Timing.TokenInterval, Usage: "`DURATION` between consecutive tokens"},
		&cli.IntFlag{Name: "tokens-per-event", Value: d.Timing.TokensPerEvent, Usage: "`N` tokens per SSE content event after the first (which carries one)"},
		&cli.DurationFlag{Name: "jitter", Value: d.Timing.Jitter, Usage: "upper bound (`DURATION`) of the seeded random delay added to the TTFT and every token interval"},
		&cli.IntFlag{Name: "slots", Value: d.Slots, Usage: "`N` decode slots: requests beyond this many wait, so TTFT grows with concurrency"},
		&cli.IntFlag{Name: "default-max-tokens", Value: d.DefaultMaxTokens, Usage: "max_tokens (`N`) of a request that gives none"},
		&cli.IntFlag{Name: "eos-after", Value: d.EOSAfter, Usage: "the model ends a completion after `N` tokens (finish \"stop\") unless the request sets ignore_eos; 0: never"},
		&cli.BoolFlag{Name: "role-prelude", Value: d.RolePrelude, Usage: "start chat streams with a role-only event before the first token (--role-prelude=false to omit)"},
		&cli.BoolFlag{Name: "prefix-cache", Value: d.PrefixCache.Enabled, Usage: "turn on the prefix cache: a hit saves --prefill-per-token per cached prompt token, usage reports prompt_tokens_details.cached_tokens (docs/caching.md)"},
		&cli.IntFlag{Name: "prefix-cache-block", Value: d.PrefixCache.BlockTokens, Usage: "prefix cache block size in `TOKENS` (hits are whole blocks)"},
		&cli.DurationFlag{Name: "shutdown-grace", Value: d.ShutdownGrace, Usage: "on SIGTERM, let in-flight requests run for `DURATION`, then cut them"},
		&cli.StringFlag{Name: "ground-truth", Usage: "write one JSON line per SSE event sent (CLOCK_MONOTONIC ns) to `FILE`"},
		&cli.StringFlag{Name: "addr-file", Usage: "write the bound HOST:PORT to `FILE` once listening (written atomically)"},
		&cli.DurationFlag{Name: "grandchild-lifetime", Value: 10 * time.Minute, Usage: "a setsid grandchild exits on its own after `DURATION` (a safety bound)"},
		&cli.StringFlag{Name: "api-key-env", Usage: "require Authorization: Bearer <the value of environment variable `NAME`> on every /v1 endpoint (401 otherwise); the variable must be set and non-empty"},
		&cli.StringFlag{Name: "tokenizer", Usage: "count usage with the vocabulary of the GGUF `FILE` (tokenizer.ggml.*) instead of words, so that a client-side token ledger agrees (docs/tokens.md)"}, // not a contract value: CLI flag name
		&cli.StringSliceFlag{Name: "fault", Usage: faultUsage()},
		&cli.StringFlag{Name: "log-level", Value: "info", Usage: "log `LEVEL` on stderr: debug, info, warn or error"},
	}
}

// config builds the server configuration: defaults, then --config, then explicit flags.
func config(c *cli.Context) (sim.Config, error) {
	cfg := sim.DefaultConfig()
	if path := c.String("config"); path != "" {
		f, err := os.Open(path)
		if err != nil {
			return cfg, fmt.Errorf("%w: read config: %v", exitcode.ErrUsage, err)
		}
		cfg, err = sim.LoadConfig(f, cfg)
		f.Close()
		if err != nil {
			return cfg, fmt.Errorf("%w: config %s: %v", exitcode.ErrUsage, path, err)
		}
	}
	if c.IsSet("model") {
		cfg.Models = c.StringSlice("model")
	}
	if c.IsSet("seed") {
		cfg.Seed = c.Uint64("seed")
	}
	for name, dst := range map[string]*time.Duration{
		"startup-delay": &cfg.Timing.StartupDelay, "ttft": &cfg.Timing.TTFT,
		"prefill-per-token": &cfg.Timing.PrefillPerToken, "token-interval": &cfg.Timing.TokenInterval,
		"jitter": &cfg.Timing.Jitter, "shutdown-grace": &cfg.ShutdownGrace,
	} {
		if c.IsSet(name) {
			*dst = c.Duration(name)
		}
	}
	for name, dst := range map[string]*int{
		"tokens-per-event": &cfg.Timing.TokensPerEvent, "slots": &cfg.Slots,
		"default-max-tokens": &cfg.DefaultMaxTokens, "eos-after": &cfg.EOSAfter,
		"prefix-cache-block": &cfg.PrefixCache.BlockTokens,
	} {
		if c.IsSet(name) {
			*dst = c.Int(name)
		}
	}
	if c.IsSet("prefix-cache") {
		cfg.PrefixCache.Enabled = c.Bool("prefix-cache")
	}
	if c.IsSet("role-prelude") {
		cfg.RolePrelude = c.Bool("role-prelude")
	}
	for _, spec := range c.StringSlice("fault") {
		if err := cfg.Faults.Set(spec); err != nil {
			return cfg, fmt.Errorf("%w: --fault: %v", exitcode.ErrUsage, err)
		}
	}
	if path := c.String("tokenizer"); path != "" { // not a contract value: CLI flag name
		tk, err := tokenize.LoadFile(path)
		if err != nil {
			return cfg, fmt.Errorf("%w: --tokenizer: %v", exitcode.ErrUsage, err)
		}
		cfg.Tokens = linesCounter{tk}
	}
	if err := cfg.Validate(); err != nil {
		return cfg, fmt.Errorf("%w: %v", exitcode.ErrUsage, err)
	}
	return cfg, nil
}

func logger(c *cli.Context) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.String("log-level"))); err != nil {
		return nil, fmt.Errorf("%w: --log-level %q: want debug, info, warn or error", exitcode.ErrUsage, c.String("log-level"))
	}
	return slog.New(slog.NewTextHandler(c.App.ErrWriter, &slog.HandlerOptions{Level: level})), nil
}

func serve(c *cli.Context) error {
	cfg, err := config(c)
	if err != nil {
		return err
	}
	addr := c.String("listen")
	if err := sim.CheckLoopback(addr); err != nil {
		return fmt.Errorf("%w: --listen: %v", exitcode.ErrUsage, err)
	}
	log, err := logger(c)
	if err != nil {
		return err
	}

	// Signals are settled before the socket exists, so that no SIGTERM can arrive unhandled.
	ctx := c.Context
	if cfg.Faults.IgnoreSIGTERM {
		signal.Ignore(syscall.SIGTERM, syscall.SIGINT)
		log.Warn("ignoring SIGTERM and SIGINT", "fault", "ignore-sigterm")
	} else {
		var stop context.CancelFunc
		ctx, stop = signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
		defer stop()
	}

	opts := []sim.Option{sim.WithLogger(log), sim.WithCrash(func() { os.Exit(exitcode.Internal) })}
	if name := c.String("api-key-env"); c.IsSet("api-key-env") {
		key, err := apiKey(name, os.LookupEnv)
		if err != nil {
			return err
		}
		opts = append(opts, sim.WithAPIKey(key))
	}
	if path := c.String("ground-truth"); path != "" {
		f, err := os.Create(path)
		if err != nil {
			return fmt.Errorf("%w: --ground-truth: %v", exitcode.ErrUsage, err)
		}
		defer f.Close()
		opts = append(opts, sim.WithGroundTruth(f))
	}
	srv, err := sim.New(cfg, opts...)
	if err != nil {
		return fmt.Errorf("%w: %v", exitcode.ErrUsage, err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	bound := ln.Addr().String()
	if path := c.String("addr-file"); path != "" {
		if err := writeAtomic(path, bound+"\n"); err != nil {
			ln.Close()
			return fmt.Errorf("%w: --addr-file: %v", exitcode.ErrUsage, err)
		}
	}
	fmt.Fprintf(c.App.Writer, "qualsim listening on http://%s pid %d\n", bound, os.Getpid())
	if cfg.Faults.SetsidGrandchild || cfg.Faults.GrandchildKeepsListener {
		if err := startGrandchild(c, cfg, ln, log); err != nil {
			ln.Close()
			return err
		}
	}
	return srv.Serve(ctx, ln)
}

// apiKey reads the API key --api-key-env names. Errors name the variable, never its value.
func apiKey(name string, lookup func(string) (string, bool)) (string, error) {
	if name == "" || strings.ContainsAny(name, "=\x00") {
		return "", fmt.Errorf("%w: --api-key-env %q is not an environment variable name", exitcode.ErrUsage, name)
	}
	key, ok := lookup(name)
	switch {
	case !ok:
		return "", fmt.Errorf("%w: --api-key-env %s: the variable is not set; export the API key the server should require in it", exitcode.ErrUsage, name)
	case key == "":
		return "", fmt.Errorf("%w: --api-key-env %s: the variable is empty; export the API key the server should require in it", exitcode.ErrUsage, name)
	}
	return key, nil
}

// startGrandchild re-executes this binary as `qualsim grandchild` in a new session.
func startGrandchild(c *cli.Context, cfg sim.Config, ln net.Listener, log *slog.Logger) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("grandchild: %w", err)
	}
	argv := []string{exe, "grandchild",
		"--parent-pid=" + strconv.Itoa(os.Getpid()),
		"--lifetime=" + c.Duration("grandchild-lifetime").String(),
	}
	for _, m := range cfg.Models {
		argv = append(argv, "--model="+m)
	}
	var inherit net.Listener
	if cfg.Faults.GrandchildKeepsListener {
		argv = append(argv, "--serve-inherited")
		inherit = ln
	}
	cmd, err := sim.StartGrandchild(argv, inherit)
	if err != nil {
		return err
	}
	go cmd.Wait() // reaps it if it exits while qualsim runs
	log.Warn("started a setsid grandchild", "fault", "setsid-grandchild", "pid", cmd.Process.Pid, "keeps_listener", inherit != nil)
	return nil
}

// writeAtomic writes data to a temporary file beside path and renames it over path.
func writeAtomic(path, data string) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".qualsim-addr-*")
	if err != nil {
		return err
	}
	if _, err := tmp.WriteString(data); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// grandchildCommand is what the setsid faults run: it waits (and, with --serve-inherited, serves
// the inherited listening socket once its parent has exited) until SIGTERM, SIGINT or its
// lifetime ends.
func grandchildCommand() *cli.Command {
	return &cli.Command{
		Name:   "grandchild",
		Hidden: true,
		Usage:  "the process the setsid-grandchild faults leave behind (internal)",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "parent-pid", Required: true},
			&cli.DurationFlag{Name: "lifetime", Value: 10 * time.Minute},
			&cli.StringSliceFlag{Name: "model"},
			&cli.BoolFlag{Name: "serve-inherited"},
		},
		Action: func(c *cli.Context) error {
			ctx, stop := signal.NotifyContext(c.Context, syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			ctx, cancel := context.WithTimeout(ctx, c.Duration("lifetime"))
			defer cancel()
			if !c.Bool("serve-inherited") {
				<-ctx.Done()
				return nil
			}
			ln, err := sim.InheritedListener()
			if err != nil {
				return err
			}
			// Accept nothing while the parent lives, so that its requests are its own.
			tick := time.NewTicker(20 * time.Millisecond)
			defer tick.Stop()
			for os.Getppid() == c.Int("parent-pid") {
				select {
				case <-ctx.Done():
					ln.Close()
					return nil
				case <-tick.C:
				}
			}
			cfg := sim.DefaultConfig()
			if models := c.StringSlice("model"); len(models) > 0 {
				cfg.Models = models
			}
			srv, err := sim.New(cfg)
			if err != nil {
				ln.Close()
				return err
			}
			return srv.Serve(ctx, ln)
		},
	}
}

// probeCommand is a minimal loopback HTTP client for scripts and readiness checks.
func probeCommand() *cli.Command {
	return &cli.Command{
		Name:      "probe",
		Usage:     "send one request to a qualsim (or any loopback server) and print the response body",
		ArgsUsage: "PATH",
		Description: "GETs PATH (or POSTs --data as JSON) at --addr or the address in --addr-file and prints the\n" +
			"response body. With --wait it retries until a 2xx answer or the deadline, which makes it a\n" +
			"readiness check. Exit 0: 2xx; 1: another status or no answer; 2: usage.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "addr", Usage: "the server's loopback `HOST:PORT`"},
			&cli.StringFlag{Name: "addr-file", Usage: "read HOST:PORT from `FILE` (as qualsim --addr-file writes it)"},
			&cli.StringFlag{Name: "data", Usage: "POST this `JSON` body instead of a GET"},
			&cli.DurationFlag{Name: "wait", Usage: "retry until a 2xx answer for up to this long"},
			&cli.DurationFlag{Name: "timeout", Value: 30 * time.Second, Usage: "bound on each request"},
			&cli.StringFlag{Name: "api-key-env", Usage: "send Authorization: Bearer <the value of environment variable `NAME`>"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 || !strings.HasPrefix(c.Args().First(), "/") {
				return fmt.Errorf("%w: probe needs one PATH starting with /", exitcode.ErrUsage)
			}
			if (c.String("addr") == "") == (c.String("addr-file") == "") {
				return fmt.Errorf("%w: probe needs exactly one of --addr and --addr-file", exitcode.ErrUsage)
			}
			token := ""
			if c.IsSet("api-key-env") {
				var err error
				if token, err = apiKey(c.String("api-key-env"), os.LookupEnv); err != nil {
					return err
				}
			}
			return probe(c.Context, probeSpec{token: token,
				addr: c.String("addr"), addrFile: c.String("addr-file"), path: c.Args().First(),
				data: c.String("data"), hasData: c.IsSet("data"), wait: c.Duration("wait"), timeout: c.Duration("timeout"),
			}, c.App.Writer)
		},
	}
}

// linesCounter counts a prompt as qualsim renders it: the lines template (docs/tokens.md).
type linesCounter struct{ *tokenize.Tokenizer }

func (l linesCounter) PromptTokens(roles, contents []string) (int64, error) {
	return l.Tokenizer.PromptTokens(contract.TokenizerTemplateLines, roles, contents)
}
