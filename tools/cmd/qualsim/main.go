// Command qualsim is qualkit's reference OpenAI-compatible server, with declared timing and faults.
package main

import (
	"os"

	"github.com/qualkit/qualkit/tools/internal/qualsim"
)

func main() { os.Exit(qualsim.Main(os.Args, os.Stdout, os.Stderr)) }
