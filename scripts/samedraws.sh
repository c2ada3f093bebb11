#!/usr/bin/env bash
# samedraws.sh BASELINE_BIN NEW_BIN: runs two builds of examples/fit on the
# same cases with the same seed and compares the "params" of their JSON
# reports field by field (internal/cmd/sameparams); exits non-zero on any
# difference or failed run. A restructure that changes no draw passes.
#
# Build the binaries with e.g. `go build -o /tmp/base ./examples/fit` at
# the commit before the change and at the change.
#
# Environment: SAMEDRAWS_CASES selects cases by name (default: all);
# SAMEDRAWS_CACHE (default ${TMPDIR:-/tmp}/samedraws) keeps the baseline's
# reports, keyed by the baseline binary's SHA-256, so a baseline runs once.
set -u
if [ $# -ne 2 ]; then
	echo "usage: $0 BASELINE_BIN NEW_BIN" >&2
	exit 2
fi
base=$1
new=$2
cd "$(dirname "$0")/.." || exit 2
cases=${SAMEDRAWS_CASES:-"svm lgssm_sp500 garch lgssm_sim"}
cache=${SAMEDRAWS_CACHE:-${TMPDIR:-/tmp}/samedraws}
bsum=$(sha256sum "$base" | cut -c1-16) || exit 2
work=$(mktemp -d) || exit 2
trap 'rm -rf "$work"' EXIT
go build -o "$work/sameparams" ./internal/cmd/sameparams || exit 2

args_of() {
	case $1 in
	svm) echo "-model svm" ;; # DAX, the default data
	lgssm_sp500) echo "-model lgssm -data testdata/sp500_returns.csv" ;;
	garch) echo "-model garch" ;;
	lgssm_sim) echo "-model lgssm -data testdata/lgssm_sim.csv" ;;
	*) return 1 ;;
	esac
}

# run BIN OUTJSON CASE
run() {
	local a
	a=$(args_of "$3") || {
		echo "unknown case $3" >&2
		return 2
	}
	# shellcheck disable=SC2086
	"$1" -json -q -seed 1 -out "$work/out_$3_$(basename "$2")" $a >"$2.tmp" 2>"$2.err" && mv "$2.tmp" "$2"
}

status=0
mkdir -p "$cache/$bsum" || exit 2
for c in $cases; do
	b="$cache/$bsum/$c.json"
	if [ ! -s "$b" ]; then
		if ! run "$base" "$b" "$c"; then
			echo "$c: baseline failed: $(tail -n 3 "$b.err")"
			status=1
			continue
		fi
	fi
	n="$work/$c.json"
	t0=$(date +%s)
	if ! run "$new" "$n" "$c"; then
		echo "$c: new binary failed: $(tail -n 3 "$n.err")"
		status=1
		continue
	fi
	if "$work/sameparams" "$b" "$n"; then
		echo "$c: same params ($(($(date +%s) - t0)) s)"
	else
		echo "$c: PARAMS DIFFER"
		status=1
	fi
done
exit $status
