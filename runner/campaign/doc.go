// Package campaign runs one qualification campaign: one workload and one variant on one host.
//
// Preflight has no side effects: it loads the workload strictly, resolves the variant and typed
// variables, checks the output path rules and the source identity, and hashes every bound
// artifact. Run then creates the run directory, launches the owned server (for serving cases),
// executes the cases in declared order, shuts the server down, re-checks source and artifacts,
// and writes the evidence and the receipt atomically, never replacing a file. See docs/qualrun.md.
package campaign
