// Package gitobj is the verifier's git object reader: HEAD and origin/main from the ref files of
// an evidence root (refs.go), and loose and packed objects, trees and the qualkit-source-tree-v1
// hash of a commit from its object database (objects.go). It runs no git and follows no path out
// of the git directory; every object is checked against its SHA-1 name and bounded before it is
// inflated. It imports nothing of verify.
package gitobj
