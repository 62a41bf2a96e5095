package qualsim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/qualkit/qualkit/tools/internal/exitcode"
	"github.com/urfave/cli/v2"
)

// registryCommand serves an in-memory OCI registry on loopback for scripts: qualrun publish,
// qualverify's oci:// arguments and cosign's referrers lookups (scripts/interop.sh) need a real
// registry, and the tests start the same one (go-containerregistry's pkg/registry) in process.
func registryCommand() *cli.Command {
	return &cli.Command{
		Name:  "registry",
		Usage: "serve an in-memory OCI registry (distribution API, OCI 1.1 referrers) on a loopback address",
		Description: "go-containerregistry's pkg/registry over plain HTTP on --listen (loopback only), blobs in memory;\n" +
			"SIGTERM or SIGINT stops it. For scripts that publish and pull receipts (docs/fleet.md).",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "listen", Value: "127.0.0.1:0", Usage: "serve on `HOST:PORT`, a loopback address (port 0 picks a free port; see --addr-file)"},
			&cli.StringFlag{Name: "addr-file", Usage: "write the bound HOST:PORT to `FILE` once listening (written atomically)"},
		},
		Action: func(c *cli.Context) error {
			host, _, err := net.SplitHostPort(c.String("listen"))
			if err != nil {
				return fmt.Errorf("%w: --listen: %v", exitcode.ErrUsage, err)
			}
			if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
				return fmt.Errorf("%w: --listen %s is not a loopback address", exitcode.ErrUsage, c.String("listen"))
			}
			ln, err := net.Listen("tcp", c.String("listen"))
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
			fmt.Fprintf(c.App.Writer, "qualsim registry listening on http://%s pid %d\n", bound, os.Getpid())
			srv := &http.Server{
				Handler:           registry.New(registry.WithReferrersSupport(true), registry.Logger(log.New(io.Discard, "", 0))),
				ReadHeaderTimeout: 10 * time.Second,
			}
			ctx, stop := signal.NotifyContext(c.Context, syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			go func() {
				<-ctx.Done()
				sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				srv.Shutdown(sctx)
			}()
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return nil
		},
	}
}
