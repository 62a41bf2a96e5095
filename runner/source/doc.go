// Package source establishes the identity of the source tree a campaign runs from: the git
// worktree root, HEAD's commit and tree, a SHA-256 content hash of HEAD's tree
// ("qualkit-source-tree-v1", defined in docs/source-identity.md), refs/remotes/origin/main, and
// whether the worktree is clean (no modified, staged, deleted or untracked file that git would
// report). Git objects are read with go-git; the clean check uses the git command when one is
// installed, because it is an order of magnitude faster on large trees, and go-git otherwise.
//
// The package never fetches and never writes to the repository, apart from the stat-cache
// refresh of the index that any `git status` performs.
package source
