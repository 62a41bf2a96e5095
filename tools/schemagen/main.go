// Command schemagen exports every CUE contract under cue/ to JSON Schema draft 2020-12
// under schemas/json/, or with -check reports any drift between the two.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/qualkit/qualkit/tools/schemagen/gen"
)

func main() { os.Exit(run()) }

func run() int {
	cueDir := flag.String("cue", "cue", "directory of the CUE module holding the contracts")
	outDir := flag.String("out", "schemas/json", "directory the JSON Schemas are written to")
	check := flag.Bool("check", false, "do not write; exit 1 if any exported schema differs from the CUE source")
	flag.Parse()
	schemas, err := gen.Generate(*cueDir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "schemagen:", err)
		return 1
	}
	if *check {
		stale, err := gen.Stale(schemas, *outDir)
		if err != nil {
			fmt.Fprintln(os.Stderr, "schemagen:", err)
			return 1
		}
		for _, s := range stale {
			fmt.Fprintf(os.Stderr, "schemagen: %s is stale; run: make generate\n", s)
		}
		if len(stale) > 0 {
			return 1
		}
		return 0
	}
	if err := gen.Write(schemas, *outDir); err != nil {
		fmt.Fprintln(os.Stderr, "schemagen:", err)
		return 1
	}
	for _, s := range schemas {
		fmt.Printf("%s -> %s\n", s.Definition, s.File)
	}
	return 0
}
