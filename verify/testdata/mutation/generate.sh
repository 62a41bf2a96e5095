#!/usr/bin/env bash
# Regenerates the evidence of the mutation closure's shapes (README.md): for each shape, its
# committed sources (workloads, launch recipes, corpora, configs) are committed in a throwaway
# repository with a bare origin (so HEAD == origin/main), and qualrun runs its one variant against
# qualsim, signed with a fresh key whose public half is kept as <shape>/mutation.pub. The
# evidence (.qualification/) is copied back over the shape's old evidence.
#
#   bash verify/testdata/mutation/generate.sh [SHAPE...]     (from the repository root; default: all)
#
# Ports 21401-21406 (one per qualsim of a shape) must be free.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/bin"
(cd "$repo" && go build -o "$tmp/bin/" ./tools/cmd/qualrun ./tools/cmd/qualsim ./tools/cmd/qualverify)
export PATH="$tmp/bin:$PATH"
export GIT_AUTHOR_NAME=qualkit GIT_AUTHOR_EMAIL=qualkit@example.invalid GIT_COMMITTER_NAME=qualkit \
	GIT_COMMITTER_EMAIL=qualkit@example.invalid GIT_CONFIG_GLOBAL=/dev/null
qualrun keygen --unencrypted --output-prefix "$tmp/mutation" >/dev/null

shapes=("$@")
[ ${#shapes[@]} -gt 0 ] || shapes=(sessions trace capacity apis driver)
for shape in "${shapes[@]}"; do
	src="$here/$shape"
	work="$tmp/$shape"
	mkdir "$work"
	(cd "$src" && tar --exclude=.qualification --exclude=mutation.pub -cf - .) | (cd "$work" && tar -xf -)
	wl=$(cd "$work" && ls workloads/*.json)
	printf '.qualification/\n' >"$work/.gitignore"
	(
		cd "$work"
		git init -q -b main
		git add -A
		git commit -q -m "mutation closure: $shape"
		git clone -q --bare . "$tmp/$shape.origin.git"
		git remote add origin "$tmp/$shape.origin.git"
		git fetch -q origin
		qualrun run "$wl" --variant mutation --host-id mutation-host \
			--output ".qualification/receipts/$shape.json" --key "$tmp/mutation.key"
		qualverify verify ".qualification/receipts/$shape.json" --key "$tmp/mutation.pub"
	)
	# The in-toto link is a second signature over the campaign, made with the same key: the
	# closure re-signs the DSSE envelope and bundle only, so the link is not kept (the intoto
	# tests cover it).
	rm -rf "$work/.qualification/receipts/$shape.in-toto"
	rm -rf "$src/.qualification"
	cp -R "$work/.qualification" "$src/.qualification"
	cp "$tmp/mutation.pub" "$src/mutation.pub"
done
