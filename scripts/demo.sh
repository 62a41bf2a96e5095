#!/usr/bin/env bash
# make demo: a real campaign against the built-in reference server (qualsim), then verification.
# It runs in this checkout, so the receipt binds qualkit's own source tree: the worktree must be
# clean (commit first). Where HEAD is not origin/main (a local branch, no remote), the campaign
# runs with --allow-unpublished-unsafe and the receipt says it is not publishable.
set -euo pipefail
cd "$(dirname "$0")/.."
make --no-print-directory build

extra=()
head=$(git rev-parse HEAD)
origin=$(git rev-parse -q --verify refs/remotes/origin/main || true)
if [ "$head" != "$origin" ]; then
	echo "make demo: HEAD is not origin/main here; running with --allow-unpublished-unsafe (the receipt will not be publishable)"
	extra+=(--allow-unpublished-unsafe)
fi

stamp=$(date -u +%Y%m%dt%H%M%S%Nz)
receipt=.qualification/receipts/demo/$stamp.json
summary=$(mktemp)
trap 'rm -f "$summary"' EXIT
set +e
bin/qualrun run workloads/demo.json --variant cpu-reference --host-id demo-host --output "$receipt" "${extra[@]}" | tee "$summary"
status=${PIPESTATUS[0]}
set -e
if [ "$status" -ne 0 ]; then
	echo "make demo: the campaign did not pass (exit $status)"
	exit "$status"
fi
rundir=$(awk '/^evidence /{print $2}' "$summary")

echo
echo "== verification: every file of the campaign against its contract"
mapfile -t evidence < <(find "$rundir" -type f \( -name '*.json' -o -name '*.jsonl' \) | sort)
bin/qualverify schema "$receipt" "${evidence[@]}" | sed -e "s|$rundir/||"
echo
echo "receipt:  $receipt"
echo "evidence: $rundir"
