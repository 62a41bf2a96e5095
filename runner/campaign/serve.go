package campaign

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/qualkit/qualkit/runner/lifecycle"
	"github.com/qualkit/qualkit/runner/redact"
	"github.com/qualkit/qualkit/schemas"
	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/evidence"
)

// ErrInput: an input the caller named cannot be used as given (a path, a flag value, a recipe or
// spec that does not validate); nothing was started. The error's text says what and how to fix
// it and does not name this class (a CLI maps it to its usage exit code).
var ErrInput = errors.New("input cannot be used")

// classError is err in class (errors.Is(e, class)) without class in its text.
type classError struct {
	class error
	err   error
}

func (e classError) Error() string        { return e.err.Error() }
func (e classError) Is(target error) bool { return target == e.class }
func (e classError) Unwrap() error        { return e.err }

// inputf is an ErrInput error with the text format gives.
func inputf(format string, a ...any) error {
	return classError{ErrInput, fmt.Errorf(format, a...)}
}

// ServeConfig is what `qualrun serve` qualifies: one launch recipe on its own, outside a campaign.
type ServeConfig struct {
	// Recipe is the launch recipe file (qualkit.launch-recipe.v1).
	Recipe string
	// LogDir is the directory of the server log (<recipe id>-<UTC time>.server.log, created
	// exclusively).
	LogDir string
	// Keeper starts the keeper that stops the server if this process dies (lifecycle.Options).
	Keeper bool
}

// ServePlan is a loaded, validated launch recipe ready to be served once.
type ServePlan struct {
	recipe  *contract.LaunchRecipeDoc
	digest  string
	dir     string
	logPath string
	keeper  bool
	red     *redact.Redactor
}

// ServeOutcome is a served recipe: its lifecycle record, and whether ctx ended (an interruption)
// before the server came into service. The server is shut down either way.
type ServeOutcome struct {
	Record      *contract.LifecycleRecordDoc
	Interrupted bool
}

// PrepareServe reads and fully validates the launch recipe and its secrets; nothing is started.
// An ErrInput error means the recipe cannot be used as given; any other error is the checker's.
func PrepareServe(cfg ServeConfig) (*ServePlan, error) {
	data, err := readInput(cfg.Recipe, "launch recipe", MaxRecipeBytes)
	if err != nil {
		return nil, classError{ErrInput, err}
	}
	out, err := schemas.CheckDocument(data)
	if err != nil {
		return nil, err
	}
	if out.Valid() && out.Contract.Name != contract.LaunchRecipe {
		return nil, inputf("%s is a %s, not a launch recipe", cfg.Recipe, out.Contract.SchemaID)
	}
	if !out.Valid() {
		var lines []string
		for _, v := range out.Violations {
			lines = append(lines, cfg.Recipe+": "+v.Error())
		}
		return nil, inputf("invalid launch recipe:\n%s", strings.Join(lines, "\n"))
	}
	r, err := schemas.DecodeChecked[contract.LaunchRecipeDoc](data, out)
	if err != nil {
		return nil, inputf("%s: %v", cfg.Recipe, err)
	}
	// The server's secrets are scrubbed from its log (and, by the caller, from what it prints).
	secrets := lifecycle.Secrets(r, nil)
	if err := lifecycle.CheckSecrets(secrets); err != nil {
		return nil, inputf("launch recipe %s: %v", cfg.Recipe, err)
	}
	abs, _ := filepath.Abs(cfg.Recipe)
	return &ServePlan{
		recipe: r, digest: evidence.DigestOf(data), dir: filepath.Dir(abs), keeper: cfg.Keeper, red: redact.New(secrets...),
		logPath: filepath.Join(cfg.LogDir, fmt.Sprintf("%s-%s.server.log", r.ID, time.Now().UTC().Format("20060102t150405.000000000z"))),
	}, nil
}

// Recipe is the validated launch recipe.
func (p *ServePlan) Recipe() *contract.LaunchRecipeDoc { return p.recipe }

// Redactor scrubs the values of the recipe's secrets (set it on everything printed about the run).
func (p *ServePlan) Redactor() *redact.Redactor { return p.red }

// Serve qualifies the recipe once, with the sequence a campaign uses (lifecycle.Start, then
// Shutdown): launch as an owned process group, readiness, listener ownership, shutdown, residue.
// When ctx ends first (a signal: an *Interruption cause) the server is shut down and the record
// names the interruption. An error means nothing was launched (lifecycle.ErrPortTaken,
// lifecycle.ErrIsolation, a recipe that cannot be launched as written).
func (p *ServePlan) Serve(ctx context.Context) (*ServeOutcome, error) {
	srv, err := lifecycle.Start(ctx, p.recipe, lifecycle.Options{RecipeDir: p.dir, RecipeDigest: p.digest, LogPath: p.logPath, Keeper: p.keeper, Redactor: p.red}, nil)
	if srv == nil {
		return nil, err
	}
	interrupted := ctx.Err() != nil
	if interrupted {
		srv.Fail(fmt.Errorf("interrupted: qualrun received %s", interruptSignal(ctx)))
	}
	return &ServeOutcome{Record: srv.Shutdown(context.WithoutCancel(ctx)), Interrupted: interrupted}, nil
}
