#!/usr/bin/env bash
# make e2e-slurm: a fleet plan through a real Slurm cluster on this machine.
#
#   1. builds qualrun, qualverify and qualsim into a temporary directory;
#   2. makes a qualification repository with four qualsim campaigns (qualrun init; loopback ports
#      19851-19854, one per row, so rows running at once on the two "nodes" of this one machine never
#      share a port), a throwaway signing key, and a four-row fleet plan pinned to its commit;
#   3. starts munged, slurmctld and two slurmd (n1, n2) on loopback with scripts/slurm/cluster.sh
#      (Debian's slurm-wlm and munge; everything under a temporary SLURM_CI_ROOT, nothing in /etc);
#   4. qualrun fleet slurm PLAN --submit: one four-task job array; waits for it;
#   5. checks that the four rows were published, that tasks ran on both nodes, and verifies each
#      receipt offline in a checkout of the pinned commit with the row laid over it; then writes
#      the signed fleet manifest over the four rows (qualverify fleet) and re-checks it (--check);
#   6. stops every daemon it started, by PID (cluster.sh stop, also on failure), and checks that
#      nothing listens on the campaign ports.
#
# Needs root (the Slurm daemons), slurm-wlm, slurmctld, slurmd, munge and git. Prints its timings.
#
# Run by .ci/run after make test (docs/fleet.md has its timings). The cluster script is a copy of
# ../shared/tools/slurm/cluster.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
for tool in slurmctld slurmd sbatch scontrol munged git; do
	command -v "$tool" >/dev/null || { echo "e2e-slurm: $tool is not installed (apt-get install slurm-wlm munge)" >&2; exit 2; }
done

t0=$(date +%s.%N)
stamp() { printf '[e2e-slurm %6.1fs] %s\n' "$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')" "$*"; }

work=$(mktemp -d /tmp/qualkit-e2e-slurm.XXXXXX)
# munged refuses a socket below a directory others cannot search; mktemp -d makes it 0700.
chmod 755 "$work"
export SLURM_CI_ROOT=$work/slurm SLURM_CI_NODES=2
cleanup() {
	rc=$?
	stamp "stopping the cluster"
	bash "$root/scripts/slurm/cluster.sh" stop || rc=1
	for port in 19851 19852 19853 19854; do
		if ss -Htln "sport = :$port" | grep -q .; then echo "e2e-slurm: something still listens on $port" >&2; rc=1; fi
	done
	if [ "$rc" -eq 0 ]; then rm -rf "$work"; else echo "e2e-slurm: failed; kept $work" >&2; fi
	exit "$rc"
}
trap cleanup EXIT

bin=$work/bin
mkdir -p "$bin"
go build -o "$bin/" ./tools/cmd/qualrun ./tools/cmd/qualverify ./tools/cmd/qualsim
export PATH=$bin:$PATH
stamp "built qualrun, qualverify, qualsim"

export GIT_AUTHOR_NAME=qualkit GIT_AUTHOR_EMAIL=qualkit@example.invalid GIT_COMMITTER_NAME=qualkit GIT_COMMITTER_EMAIL=qualkit@example.invalid GIT_CONFIG_GLOBAL=/dev/null
repo=$work/repo
mkdir -p "$repo"
git -C "$repo" init -q -b main
echo "A qualification repository." > "$repo/README.md"
git -C "$repo" add README.md
git -C "$repo" commit -q -m init
for i in 0 1 2 3; do
	(cd "$repo" && qualrun init --name "fleet$i" --model-id "m-fleet$i" --port $((19851 + i)) --host-id n1 -- \
		qualsim --listen '127.0.0.1:{port}' --model "m-fleet$i" --ttft 2ms --token-interval 1ms >/dev/null)
done
git -C "$repo" add workloads
git -C "$repo" commit -q -m 'qualkit: four fleet campaigns'
commit=$(git -C "$repo" rev-parse HEAD)
qualrun keygen --unencrypted --output-prefix "$work/k" >/dev/null
cat > "$work/plan.json" <<EOP
{
  "schema": "qualkit.fleet-plan.v1",
  "id": "e2e-slurm",
  "description": "Four qualsim campaigns on a two-node Slurm cluster.",
  "repository": "$repo",
  "commit": "$commit",
  "qualrun": "$bin/qualrun",
  "signing": {"key_file": "$work/k.key"},
  "receipts": {"directory": "$work/receipts"},
  "rows": [
    {"index": 0, "workload": "workloads/fleet0.json", "variant": "default", "repetition": 1, "host": {"slurm": {"nodelist": "n1"}}},
    {"index": 1, "workload": "workloads/fleet1.json", "variant": "default", "repetition": 1, "host": {"slurm": {"nodelist": "n2"}}},
    {"index": 2, "workload": "workloads/fleet2.json", "variant": "default", "repetition": 1, "host": {"slurm": {"nodelist": "n1"}}},
    {"index": 3, "workload": "workloads/fleet3.json", "variant": "default", "repetition": 1, "host": {"slurm": {"nodelist": "n2"}}}
  ]
}
EOP
stamp "repository, key and plan ready (commit $commit)"

bash "$root/scripts/slurm/cluster.sh" start
# shellcheck disable=SC1091
. "$SLURM_CI_ROOT/env"
stamp "cluster up: $(sinfo -h -o '%N %t' | tr '\n' ' ')"

cd "$work"
out=$(qualrun fleet slurm plan.json --output job.sbatch --submit)
echo "$out"
# One job array per node the plan pins rows to (rows 0 and 2 on n1, 1 and 3 on n2): a host fills
# two rows of a fleet only where the plan pins both to it (docs/fleet.md).
jobs=$(echo "$out" | sed -n 's/^submitted job \([0-9]*\) .*/\1/p')
[ -n "$jobs" ] || { echo "e2e-slurm: no job id in qualrun's output" >&2; exit 1; }
for job in $jobs; do
	stamp "submitted job array $job"
	bash "$root/scripts/slurm/cluster.sh" wait "$job" 600
	stamp "job array $job done"
done

hosts=""
for row in 0 1 2 3; do
	dirs=("$work/receipts/e2e-slurm/row-$row"/*/)
	[ "${#dirs[@]}" -eq 1 ] && [ -d "${dirs[0]}" ] || { echo "e2e-slurm: row $row: want one published host, got ${dirs[*]}" >&2; exit 1; }
	host=$(basename "${dirs[0]}")
	hosts="$hosts $host"
	audit=$work/audit-$row
	git clone -q "$repo" "$audit"
	git -C "$audit" checkout -q --detach "$commit"
	cp -R "${dirs[0]}." "$audit/"
	(cd "$audit" && qualverify verify "qualification/receipts/fleet/e2e-slurm/row-$row/$host.json" --key "$work/k.pub" | grep '^verdict  verified$')
	stamp "row $row ran on $host and verifies"
done
for node in n1 n2; do
	case " $hosts " in *" $node "*) ;; *) echo "e2e-slurm: no task ran on $node (hosts:$hosts)" >&2; exit 1 ;; esac
done
stamp "four receipts verified, tasks on both nodes:$hosts"

# The fleet manifest over the four rows: one audit tree (the pinned commit with every published row
# laid over it), a signed manifest naming four passed rows, and its offline re-check.
qualrun keygen --unencrypted --output-prefix "$work/fleet" >/dev/null
git clone -q "$repo" "$work/audit"
git -C "$work/audit" checkout -q --detach "$commit"
for d in "$work/receipts/e2e-slurm/row-"*/*/; do cp -R "$d." "$work/audit/"; done
(cd "$work" && qualverify fleet plan.json audit/qualification/receipts/fleet/e2e-slurm --key k.pub --sign-key fleet.key --output fleet.json) |
	tee "$work/fleet.out"
grep -q '^fleet e2e-slurm: 4 rows: 4 passed, 0 failed, 0 missing; 0 receipts not belonging$' "$work/fleet.out" ||
	{ echo "e2e-slurm: the fleet manifest does not name four passed rows" >&2; exit 1; }
(cd "$work" && qualverify fleet --check fleet.json plan.json audit/qualification/receipts/fleet/e2e-slurm --key k.pub --manifest-key fleet.pub) |
	grep 'holds: signed by'
stamp "fleet manifest signed over the four rows and re-checked offline"
