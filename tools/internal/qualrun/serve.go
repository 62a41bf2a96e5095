package qualrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/qualkit/qualkit/runner/campaign"
	"github.com/qualkit/qualkit/runner/lifecycle"
	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/tools/internal/cliapp"
	"github.com/qualkit/qualkit/tools/internal/exitcode"
	"github.com/urfave/cli/v2"
)

func serveCommand() *cli.Command {
	return &cli.Command{
		Name:  "serve",
		Usage: "qualify a launch recipe: launch, readiness, listener ownership, shutdown, residue",
		Description: "Launches the recipe's server as an owned process group, waits for /v1/models to list the\n" +
			"model within the startup deadline, proves the listening socket belongs to the server, shuts it\n" +
			"down with SIGTERM and checks that no process or listener remains. Prints the lifecycle record.\n" +
			"Exit 0 only if every condition holds; 1 if one fails (or the port was taken: nothing launched);\n" +
			"2 for usage errors; 130 when interrupted by SIGINT, SIGTERM, SIGHUP or SIGQUIT (the server is shut\n" +
			"down first). A keeper process stops the server if qualrun itself is killed.\n" +
			"With --reap (and no --launch): find what earlier qualkit runs on this host left behind (qualkit\n" +
			"cgroups, processes carrying a dead run's QUALKIT_RUN_ID) and remove it; --run-id limits that to one run.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "launch", Usage: "launch recipe `FILE` (qualkit.launch-recipe.v1)"},
			&cli.StringFlag{Name: "log-dir", Value: ".qualification/serve", Usage: "`DIR` for the server log (created; the log itself is created exclusively)"},
			&cli.BoolFlag{Name: "json", Usage: "print the lifecycle record as JSON instead of a summary"},
			&cli.BoolFlag{Name: "reap", Usage: "remove the leftovers of earlier qualkit runs whose qualrun is dead (no --launch)"},
			&cli.StringFlag{Name: "run-id", Usage: "with --reap: only the leftovers of run `ID`"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return fmt.Errorf("%w: serve takes no arguments, got %q", exitcode.ErrUsage, c.Args().First())
			}
			if c.Bool("reap") {
				if c.String("launch") != "" {
					return fmt.Errorf("%w: serve --reap takes no --launch", exitcode.ErrUsage)
				}
				return reap(c.String("run-id"), c.App.Writer)
			}
			if c.String("launch") == "" {
				return fmt.Errorf("%w: serve needs --launch RECIPE", exitcode.ErrUsage)
			}
			return serve(c.Context, c.String("launch"), c.String("log-dir"), c.Bool("json"), c.App.Writer, c.App.ErrWriter)
		},
	}
}

func serve(ctx context.Context, recipePath, logDir string, asJSON bool, stdout, stderr io.Writer) error {
	plan, err := campaign.PrepareServe(campaign.ServeConfig{Recipe: recipePath, LogDir: logDir, Keeper: true})
	if errors.Is(err, campaign.ErrInput) {
		return fmt.Errorf("%w: %v", exitcode.ErrUsage, err)
	}
	if err != nil {
		return err
	}
	// The server's secrets are scrubbed from everything printed here.
	so, se := newScrubWriter(stdout), newScrubWriter(stderr)
	so.set(plan.Redactor())
	se.set(plan.Redactor())
	stdout, stderr = so, se
	ctx, stop := interruptContext(ctx)
	defer stop()
	warnLeftovers(stderr)
	out, err := plan.Serve(ctx)
	if err != nil {
		if errors.Is(err, lifecycle.ErrPortTaken) || errors.Is(err, lifecycle.ErrIsolation) {
			cliapp.Fprintf(stderr, "qualrun: %v; nothing was launched\n", cliapp.ErrorLines(err))
			return fmt.Errorf("%w: %v", exitcode.ErrRejected, err)
		}
		return fmt.Errorf("%w: %v", exitcode.ErrUsage, err)
	}
	rec := out.Record
	if asJSON {
		b, _ := json.MarshalIndent(rec, "", "  ")
		fmt.Fprintln(stdout, string(b))
	} else {
		printSummary(stdout, rec)
	}
	switch {
	case out.Interrupted:
		fmt.Fprintln(stderr, "qualrun: interrupted; the server was shut down")
		return exitcode.ErrInterrupted
	case rec.Verdict != contract.RecordVerdictPassed:
		return fmt.Errorf("%w: lifecycle failed", exitcode.ErrRejected)
	}
	return nil
}

func printSummary(w io.Writer, rec *contract.LifecycleRecordDoc) {
	cliapp.Fprintf(w, "recipe      %s\n", rec.Recipe.ID)
	if l := rec.Launch; l != nil {
		cliapp.Fprintf(w, "launched    pid %d (group %d) %s\n", l.PID, l.PGID, l.Executable.Path)
		cliapp.Fprintf(w, "log         %s (%d bytes, %s)\n", l.Log.Path, l.Log.Bytes, l.Log.Digest)
	}
	if rd := rec.Readiness; rd != nil {
		cliapp.Fprintf(w, "ready       %v after %.0f ms, %d probes (deadline %.0f ms)\n", rd.Ready, rd.ElapsedMs, rd.Probes, rd.DeadlineMs)
	}
	if l := rec.Listener; l != nil {
		cliapp.Fprintf(w, "listener    owned %v, inodes %v, owners %v\n", l.Owned, l.Inodes, l.OwnerPIDs)
	}
	if sd := rec.Shutdown; sd != nil {
		code := "none" // not a contract value: the summary's word for no exit code
		if sd.ExitCode != nil {
			code = fmt.Sprint(*sd.ExitCode)
		}
		cliapp.Fprintf(w, "shutdown    %s, %.0f ms, forced %v, exit %s, acceptable %v\n", sd.Signal, sd.ElapsedMs, sd.Forced, code, sd.Acceptable)
	}
	cliapp.Fprintf(w, "residue     %d process(es), %d listener(s)\n", len(rec.Residue.Processes), len(rec.Residue.Listeners))
	for _, u := range rec.Unsupported {
		cliapp.Fprintf(w, "unsupported %s\n", u)
	}
	for _, f := range rec.Failures {
		cliapp.Fprintf(w, "FAILURE     %s\n", f)
	}
	cliapp.Fprintf(w, "verdict     %s\n", rec.Verdict)
}
