package fleet

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/qualkit/qualkit/schemas/contract"
)

// shq quotes s for bash: in single quotes, each embedded single quote closed, escaped and reopened.
func shq(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// taskBody is the part of a job script that every engine shares: the plan's constants, the row
// table, the checkout of the pinned commit into a fresh worktree, qualrun run, and the publishing
// of the receipt and its evidence. Before it runs, the engine's preamble has set ROW (the row
// index) and HOST_NAME (the engine's name of the host). The body ends by setting RC, qualrun's exit
// code (or the script's own usage or internal code); the engine's epilogue decides what RC means.
// rows are the indices the table holds (nil: every row).
func taskBody(b *strings.Builder, plan *Plan, pol ExitPolicy, rows []int) {
	d := plan.Doc
	qualrun := d.Qualrun
	if qualrun == "" {
		qualrun = "qualrun"
	}
	fmt.Fprintf(b, "PLAN_ID=%s\n", shq(d.ID))
	fmt.Fprintf(b, "PLAN_DIGEST=%s\n", shq(plan.Digest))
	fmt.Fprintf(b, "REPOSITORY=%s\n", shq(d.Repository))
	fmt.Fprintf(b, "COMMIT=%s\n", shq(d.Commit))
	fmt.Fprintf(b, "QUALRUN=%s\n", shq(qualrun))
	fmt.Fprintf(b, "RECEIPTS=%s\n", shq(d.Receipts.Directory))
	fmt.Fprintf(b, "SIGNING=(--key %s", shq(d.Signing.KeyFile))
	if d.Signing.PasswordFile != "" {
		fmt.Fprintf(b, " --password-file %s", shq(d.Signing.PasswordFile))
	}
	b.WriteString(")\n")
	fmt.Fprintf(b, "EXIT_USAGE=%d\nEXIT_INTERNAL=%d\n", pol.Usage, pol.Internal)
	b.WriteString(`
# The row table: one entry per plan row, selected by ROW.
row() {
  case "$1" in
`)
	var keep map[int]bool
	if rows != nil {
		keep = make(map[int]bool, len(rows))
		for _, i := range rows {
			keep[i] = true
		}
	}
	for _, r := range d.Rows {
		if keep != nil && !keep[int(r.Index)] {
			continue
		}
		fmt.Fprintf(b, "    %d) WORKLOAD=%s VARIANT=%s REPETITION=%d VARS=(%s) ;;\n",
			r.Index, shq(r.Workload), shq(r.Variant), r.Repetition, varArgs(r))
	}
	b.WriteString(`    *) return 1 ;;
  esac
}

fail() { echo "qualkit fleet: $PLAN_ID row ${ROW:-?}: $*" >&2; }

RC=0
if ! [[ "${ROW:-}" =~ ^[0-9]+$ ]] || ! row "$ROW"; then
  fail "task index '${ROW:-}' names no row of the plan: submit the script with the array the plan gives"
  RC=$EXIT_USAGE
fi
# The host id is the engine's host name, lowercased, other characters as '-' (qualrun --host-id).
HOST_ID=$(printf '%s' "${HOST_NAME:-}" | tr 'A-Z' 'a-z' | tr -c 'a-z0-9._-' '-' | cut -c1-64)
if [ "$RC" -eq 0 ] && ! [[ "$HOST_ID" =~ ^[a-z0-9][a-z0-9._-]{1,63}$ ]]; then
  fail "host name '${HOST_NAME:-}' gives no host id"
  RC=$EXIT_USAGE
fi

WORK=
cleanup() { if [ -n "$WORK" ]; then rm -rf -- "$WORK"; fi; }
trap cleanup EXIT
if [ "$RC" -eq 0 ]; then
  # A fresh worktree of the pinned commit, on this host, for this task alone.
  WORK=$(mktemp -d "${TMPDIR:-/tmp}/qualkit-fleet.XXXXXXXX") &&
    git clone --quiet --no-checkout -- "$REPOSITORY" "$WORK/src" &&
    git -C "$WORK/src" -c advice.detachedHead=false checkout --quiet --detach "$COMMIT" &&
    [ "$(git -C "$WORK/src" rev-parse HEAD)" = "$COMMIT" ] || {
    fail "cannot check out $COMMIT of $REPOSITORY into a fresh worktree"
    RC=$EXIT_INTERNAL
  }
fi
if [ "$RC" -eq 0 ]; then
  OUT="qualification/receipts/fleet/$PLAN_ID/row-$ROW/$HOST_ID.json"
  echo "qualkit fleet: $PLAN_ID ($PLAN_DIGEST) row $ROW repetition $REPETITION on $HOST_ID: $QUALRUN run $WORKLOAD --variant $VARIANT" >&2
  (cd "$WORK/src" && exec "$QUALRUN" run "$WORKLOAD" --variant "$VARIANT" --host-id "$HOST_ID" --output "$OUT" "${VARS[@]}" "${SIGNING[@]}") || RC=$?
  # Publish whatever receipt the run wrote (a failed run's receipt says so): the receipt, its
  # attestation files beside it (OUT without .json, then a dot) and the run directory, keeping their
  # paths relative to the repository root, into RECEIPTS/PLAN_ID/row-ROW/HOST_ID/, which is created
  # once and never replaced. Nothing else of qualification/: receipts committed at COMMIT are not
  # this row's.
  if [ -f "$WORK/src/$OUT" ]; then
    DEST="$RECEIPTS/$PLAN_ID/row-$ROW/$HOST_ID"
    STAGE="$RECEIPTS/$PLAN_ID/row-$ROW/.incoming-$HOST_ID-$$"
    if mkdir -p -- "$STAGE" &&
      (cd "$WORK/src" && shopt -s nullglob && cp -R --parents -- "$OUT" "${OUT%.json}".* .qualification/runs "$STAGE"/) &&
      mv -T -- "$STAGE" "$DEST"; then
      echo "qualkit fleet: published $DEST/$OUT" >&2
    else
      rm -rf -- "$STAGE"
      fail "cannot publish the receipt into $DEST (is it there already?)"
      if [ "$RC" -eq 0 ]; then RC=$EXIT_INTERNAL; fi
    fi
  fi
fi
`)
}

// varArgs is a row's --var NAME=VALUE words, sorted by name.
func varArgs(r contract.FleetRow) string {
	names := make([]string, 0, len(r.Variables))
	for n := range r.Variables {
		names = append(names, n)
	}
	sort.Strings(names)
	var w []string
	for _, n := range names {
		w = append(w, "--var", shq(n+"="+r.Variables[n]))
	}
	return strings.Join(w, " ")
}

// codeList is codes as bash words.
func codeList(codes []int) string {
	w := make([]string, len(codes))
	for i, c := range codes {
		w[i] = strconv.Itoa(c)
	}
	return strings.Join(w, " ")
}
