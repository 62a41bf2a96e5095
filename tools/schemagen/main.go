// Command schemagen exports every CUE contract under cue/ to JSON Schema draft 2020-12
// under schemas/json/ and, with -go, generates the Go of the contracts (typed enums, contract
// name constants, the artifact-kind table, the provenance table of the evidence contracts) into
// package contract; with -docs, the provenance section of each evidence contract's page under
// docs/contracts; with -check it writes nothing and reports any drift of any output.
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
	goDir := flag.String("go", "", "directory of package contract the generated Go is written to (empty: no Go)")
	docsDir := flag.String("docs", "", "directory of the contract pages whose provenance sections are generated (empty: none)")
	check := flag.Bool("check", false, "do not write; exit 1 if any exported schema or generated Go file differs from the CUE source")
	flag.Parse()
	schemas, err := gen.Generate(*cueDir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "schemagen:", err)
		return 1
	}
	var goFiles []gen.GoFile
	if *goDir != "" {
		if goFiles, err = gen.GenerateGo(*cueDir, schemas); err != nil {
			fmt.Fprintln(os.Stderr, "schemagen:", err)
			return 1
		}
	}
	var docs []gen.DocFile
	if *docsDir != "" {
		tables, err := gen.BuildProvenance(schemas)
		if err == nil {
			docs, err = gen.ProvenanceDocs(tables, *docsDir)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "schemagen:", err)
			return 1
		}
	}
	if *check {
		stale, err := gen.Stale(schemas, *outDir)
		if err != nil {
			fmt.Fprintln(os.Stderr, "schemagen:", err)
			return 1
		}
		if *goDir != "" {
			staleGo, err := gen.StaleGo(goFiles, *goDir)
			if err != nil {
				fmt.Fprintln(os.Stderr, "schemagen:", err)
				return 1
			}
			stale = append(stale, staleGo...)
		}
		staleDocs, err := gen.StaleDocs(docs, *docsDir)
		if err != nil {
			fmt.Fprintln(os.Stderr, "schemagen:", err)
			return 1
		}
		stale = append(stale, staleDocs...)
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
	if *goDir != "" {
		if err := gen.WriteGo(goFiles, *goDir); err != nil {
			fmt.Fprintln(os.Stderr, "schemagen:", err)
			return 1
		}
		for _, f := range goFiles {
			fmt.Printf("go -> %s/%s\n", *goDir, f.Name)
		}
	}
	if err := gen.WriteDocs(docs, *docsDir); err != nil {
		fmt.Fprintln(os.Stderr, "schemagen:", err)
		return 1
	}
	for _, f := range docs {
		fmt.Printf("provenance -> %s/%s\n", *docsDir, f.Name)
	}
	return 0
}
