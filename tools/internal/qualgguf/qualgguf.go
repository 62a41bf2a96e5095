// Package qualgguf is the qualgguf command line: it writes qualkit's tiny llama GGUF model (a
// deterministic, random-weight model that real engines such as ollama and llama-server load) and
// inspects GGUF files. scripts/e2e-real.sh uses it to qualify a real engine without a model hub.
package qualgguf

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/qualkit/qualkit/tools/internal/exitcode"
	"github.com/qualkit/qualkit/tools/internal/gguf"
	"github.com/urfave/cli/v2"
)

// Version is set at build time with -ldflags "-X .../qualgguf.Version=...".
var Version = "dev"

// Main runs qualgguf with args (args[0] is the program name) and returns the exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	app := &cli.App{
		Name:  "qualgguf",
		Usage: "write qualkit's tiny deterministic llama GGUF model, or inspect a GGUF file",
		Description: "The tiny model has seeded random F32 weights and a small SentencePiece vocabulary. It never\n" +
			"emits end-of-sequence or the same token text twice in a row, so every request runs to\n" +
			"max_tokens. The same flags always write the same bytes. See docs/engines.md.",
		Version:                   Version,
		Writer:                    stdout,
		ErrWriter:                 stderr,
		ExitErrHandler:            func(*cli.Context, error) {},
		DisableSliceFlagSeparator: true,
		OnUsageError: func(_ *cli.Context, err error, _ bool) error {
			return fmt.Errorf("%w: %v", exitcode.ErrUsage, err)
		},
		Commands: []*cli.Command{writeCommand(), inspectCommand()},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return fmt.Errorf("%w: unknown command %q (see qualgguf --help)", exitcode.ErrUsage, c.Args().First())
			}
			return fmt.Errorf("%w: name a command: write or inspect (see qualgguf --help)", exitcode.ErrUsage)
		},
	}
	for _, cmd := range app.Commands {
		cmd.OnUsageError = app.OnUsageError
	}
	err := app.Run(args)
	if err != nil {
		fmt.Fprintln(stderr, "qualgguf:", err)
	}
	return exitcode.Code(err)
}

func writeCommand() *cli.Command {
	d := DefaultConfig()
	return &cli.Command{
		Name:  "write",
		Usage: "write the tiny llama model to --output (replacing it atomically)",
		Description: "Prints the file's sha256 digest, size, parameter count and vocabulary size. The file is\n" +
			"written to a temporary file in the same directory and renamed into place.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "output", Usage: "the model `FILE` to write"},
			&cli.Uint64Flag{Name: "seed", Value: d.Seed, Usage: "weight seed"},
			&cli.IntFlag{Name: "dim", Value: d.Dim, Usage: "embedding length"},
			&cli.IntFlag{Name: "layers", Value: d.Layers, Usage: "transformer blocks"},
			&cli.IntFlag{Name: "heads", Value: d.Heads, Usage: "attention heads"},
			&cli.IntFlag{Name: "kv-heads", Value: d.KVHeads, Usage: "key/value heads"},
			&cli.IntFlag{Name: "ff", Value: d.FF, Usage: "feed-forward length"},
			&cli.IntFlag{Name: "context", Value: d.Context, Usage: "declared training context length"},
			&cli.IntFlag{Name: "signature-dims", Value: d.SignatureDims, Usage: "residual dimensions carrying the input token's signature"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return fmt.Errorf("%w: write takes no arguments, got %q", exitcode.ErrUsage, c.Args().First())
			}
			out := c.String("output")
			if out == "" {
				return fmt.Errorf("%w: write needs --output FILE", exitcode.ErrUsage)
			}
			cfg := Config{Dim: c.Int("dim"), Layers: c.Int("layers"), Heads: c.Int("heads"), KVHeads: c.Int("kv-heads"),
				FF: c.Int("ff"), Context: c.Int("context"), SignatureDims: c.Int("signature-dims"), Seed: c.Uint64("seed")}
			f, err := TinyLlama(cfg)
			if err != nil {
				return fmt.Errorf("%w: %v", exitcode.ErrUsage, err)
			}
			digest, n, err := writeFile(out, f)
			if err != nil {
				return err
			}
			fmt.Fprintf(c.App.Writer, "%s: %s, %d bytes, %d parameters, vocabulary %d\n", out, digest, n, Parameters(f), VocabularySize(f))
			return nil
		},
	}
}

// writeFile writes f to a temporary file beside path, syncs it and renames it to path. It returns
// the file's digest and size.
func writeFile(path string, f *gguf.File) (string, int64, error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return "", 0, fmt.Errorf("%w: --output %s: %v", exitcode.ErrUsage, path, err)
	}
	defer os.Remove(tmp.Name())
	h := sha256.New()
	n, err := gguf.Write(io.MultiWriter(tmp, h), f)
	if err == nil {
		err = tmp.Chmod(0o644)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return "", 0, fmt.Errorf("write %s: %w", path, err)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), n, nil
}

func inspectCommand() *cli.Command {
	return &cli.Command{
		Name:      "inspect",
		Usage:     "print a GGUF file's digest, metadata and tensor table",
		ArgsUsage: "FILE",
		Description: "Reads the header, metadata and tensor table (bounded; the tensor data is only hashed).\n" +
			"Arrays are shown as their element type and length. Exit 1 when FILE is not a GGUF v3 file.",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "print one JSON object"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return fmt.Errorf("%w: inspect needs one FILE", exitcode.ErrUsage)
			}
			return inspect(c.Args().First(), c.Bool("json"), c.App.Writer)
		},
	}
}

// Summary is what inspect prints.
type Summary struct {
	File       string            `json:"file"`
	Digest     string            `json:"digest"`
	Bytes      int64             `json:"bytes"`
	Version    uint32            `json:"version"`
	Alignment  uint64            `json:"alignment"`
	DataOffset int64             `json:"data_offset"`
	Metadata   []SummaryKV       `json:"metadata"`
	Tensors    []gguf.TensorInfo `json:"tensors"`
}

// SummaryKV is one metadata pair as inspect shows it.
type SummaryKV struct {
	Key   string `json:"key"`
	Type  string `json:"type"`
	Value any    `json:"value"`
}

func inspect(path string, asJSON bool, w io.Writer) error {
	fh, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("%w: %v", exitcode.ErrUsage, err)
	}
	defer fh.Close()
	h, err := gguf.Read(fh)
	if err != nil {
		return fmt.Errorf("%w: %s: %v", exitcode.ErrRejected, path, err)
	}
	if _, err := fh.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	hs := sha256.New()
	n, err := io.Copy(hs, fh)
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	s := Summary{File: path, Digest: "sha256:" + hex.EncodeToString(hs.Sum(nil)), Bytes: n, Version: h.Version,
		Alignment: h.Alignment, DataOffset: h.DataOffset, Metadata: []SummaryKV{}, Tensors: h.Tensors}
	for _, kv := range h.Metadata {
		s.Metadata = append(s.Metadata, summarize(kv))
	}
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(s)
	}
	fmt.Fprintf(w, "%s: %s, %d bytes, GGUF v%d, alignment %d, tensor data at %d\n", s.File, s.Digest, s.Bytes, s.Version, s.Alignment, s.DataOffset)
	for _, kv := range s.Metadata {
		if kv.Value == nil {
			fmt.Fprintf(w, "  %-40s %s\n", kv.Key, kv.Type)
			continue
		}
		fmt.Fprintf(w, "  %-40s %-14s %v\n", kv.Key, kv.Type, kv.Value)
	}
	for _, t := range s.Tensors {
		dims := make([]string, len(t.Dims))
		for i, d := range t.Dims {
			dims[i] = fmt.Sprint(d)
		}
		fmt.Fprintf(w, "  tensor %-32s type %-2d [%s] at %d\n", t.Name, t.Type, strings.Join(dims, " "), t.Offset)
	}
	return nil
}

// summarize shows a scalar as is (a float that JSON cannot carry as its text) and an array as
// its element type and length.
func summarize(kv gguf.KV) SummaryKV {
	v := reflect.ValueOf(kv.Value)
	if v.Kind() == reflect.Slice {
		return SummaryKV{kv.Key, fmt.Sprintf("[%d]%s", v.Len(), v.Type().Elem()), nil}
	}
	if v.CanFloat() && (math.IsNaN(v.Float()) || math.IsInf(v.Float(), 0)) {
		return SummaryKV{kv.Key, v.Type().String(), fmt.Sprint(kv.Value)}
	}
	return SummaryKV{kv.Key, v.Type().String(), kv.Value}
}
