#!/usr/bin/env bash
# make demo: a real campaign against the built-in reference server (qualsim), signed with a fresh
# demo key, then offline verification of the receipt, its attestation and every evidence file;
# then the evidence-driver campaign (workloads/driver-reference.json), signed and verified alike.
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
# A throwaway signing key for this demo (unencrypted: it protects nothing). Real hosts keep an
# encrypted key: qualrun keygen --output-prefix PATH with QUALKIT_PASSWORD set.
mkdir -p .qualification/demo-keys
key=.qualification/demo-keys/$stamp
bin/qualrun keygen --output-prefix "$key" --unencrypted
summary=$(mktemp)
trap 'rm -f "$summary"' EXIT
set +e
bin/qualrun run workloads/demo.json --variant cpu-reference --host-id demo-host --output "$receipt" --key "$key.key" "${extra[@]}" | tee "$summary"
status=${PIPESTATUS[0]}
set -e
if [ "$status" -ne 0 ]; then
	echo "make demo: the campaign did not pass (exit $status)"
	exit "$status"
fi
rundir=$(awk '/^evidence /{print $2}' "$summary")

echo
echo "== every file of the campaign against its contract"
mapfile -t evidence < <(find "$rundir" -type f \( -name '*.json' -o -name '*.jsonl' \) | sort)
bin/qualverify schema "$receipt" "${evidence[@]}" | sed -e "s|$rundir/||"
echo
echo "== offline verification: schemas, source, hashes, signature, cleanup, tolerances, comparability, scope"
bin/qualverify verify "$receipt" --key "$key.pub" "${extra[@]}"

echo
echo "== evidence drivers: the reference worker offline (next-token, path, layer attribution), then verification"
py=/usr/bin/python3
[ -x "$py" ] || py=$(python3 -c 'import os, sys; print(os.path.realpath(sys.executable))') || { echo "make demo: the evidence drivers need python3"; exit 1; }
dreceipt=.qualification/receipts/demo/$stamp-drivers.json
bin/qualrun run workloads/driver-reference.json --variant cpu-reference --host-id demo-host --output "$dreceipt" --var python="$py" --key "$key.key" "${extra[@]}"
bin/qualverify verify "$dreceipt" --key "$key.pub" "${extra[@]}"
echo
echo "receipt:     $receipt"
echo "attestation: ${receipt%.json}.intoto.dsse.json, ${receipt%.json}.sigstore.json"
echo "drivers:     $dreceipt"
echo "public key:  $key.pub"
echo "report:      bin/qualverify report $receipt --key $key.pub ${extra[*]} -o .qualification/demo-report.html"
echo "             bin/qualverify report $dreceipt --key $key.pub ${extra[*]} -o .qualification/demo-drivers-report.html"
echo "evidence:    $rundir"
