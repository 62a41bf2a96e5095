// Package campaign runs one qualification campaign: one workload and one variant on one host.
//
// Preflight has no side effects: it loads the workload strictly, resolves the variant and typed
// variables, checks the output path rules and the source identity, and hashes every bound
// artifact. Run then creates the run directory, launches the owned server (for serving cases),
// executes the cases in declared order, shuts the server down, re-checks source and artifacts,
// and writes the evidence and the receipt atomically, never replacing a file. See docs/qualrun.md.
//
// The package also holds the two parts of a campaign that qualrun runs on their own, each one
// library call behind a side-effect-free preparation, as Preflight and Run are: PrepareServe and
// ServePlan.Serve qualify a launch recipe with the campaign's own server sequence
// (lifecycle.Start, then Shutdown), and PrepareDriver and DriverPlan.Run run one evidence driver
// under the same unsupported-mechanism policy as a campaign's driver cases
// (driver.UnsupportedVerdict). Like the rest of the package they are silent: the caller prints.
package campaign
