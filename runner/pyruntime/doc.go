// Package pyruntime captures a portable manifest (qualkit.runtime-manifest.v1) of a reference
// Python runtime: the interpreter's path, version and digest, the distributions installed in its
// site-packages and dist-packages directories (name, version, digest of the RECORD file), and the
// digest of the code that launches servers in it. The manifest describes software only: no host
// temperature, resource policy or anything else that selects a machine.
package pyruntime
