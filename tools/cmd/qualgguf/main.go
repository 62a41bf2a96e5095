// Command qualgguf writes qualkit's tiny deterministic llama GGUF model and inspects GGUF files.
package main

import (
	"os"

	"github.com/qualkit/qualkit/tools/internal/qualgguf"
)

func main() { os.Exit(qualgguf.Main(os.Args, os.Stdout, os.Stderr)) }
