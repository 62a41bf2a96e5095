// Command qualrun runs qualkit campaigns on a benchmark host.
package main

import (
	"os"

	"github.com/qualkit/qualkit/tools/internal/qualrun"
)

func main() { os.Exit(qualrun.Main(os.Args, os.Stdout, os.Stderr)) }
