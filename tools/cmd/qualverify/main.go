// Command qualverify is the offline publication gate for qualkit evidence.
package main

import (
	"os"

	"github.com/qualkit/qualkit/tools/internal/qualverify"
)

func main() { os.Exit(qualverify.Main(os.Args, os.Stdout, os.Stderr)) }
