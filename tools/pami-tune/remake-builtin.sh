#!/bin/sh
# Measures the built-in rules' profiles again (docs/tuning.md, "Built-in
# rules"), from a build directory, on a quiet machine:
#   cd build && ../tools/pami-tune/remake-builtin.sh [MIN_CPU [add]]
# The three sweeps go to a temporary directory first; their cpu lines
# (pami-tune --table) are printed, and the files replace
# docs/profiles/builtin-{2,4,8}x1.json only when the 2-task sweep's mean
# cpu is at least MIN_CPU (default 0.9): two tasks have a CPU each here,
# so a lower share means other programs took the CPUs during the sweep
# (4 and 8 tasks are below 1 by construction on 2 CPUs). Then `ninja`
# regenerates the table. PAMI_TUNE_ARGS adds pami-tune options (e.g.
# --quick to try the script itself). Exit 0: replaced; 1: left alone.
# Before and after the sweeps it prints the machine's floor between two
# tasks (pami-bench's floor_lat, docs/PERFORMANCE.md): on a VM whose
# CPUs the host places as it likes, the cost of a cache line between
# two cores moves (0.045-0.19 us within an hour here), and with it the
# order of close algorithms. pami-tune records its own floor per round
# in the files (docs/tuning.md, "Rounds and the machine's state").
# With "add", the sweeps become a further round of the committed
# profiles (pami-tune --merge) instead of replacing them: run it again
# when the floor shows the other state, and the tables take per size
# the algorithm never far behind in any round. Exit 0 then: added.
set -eu
min=${1:-0.9}
add=${2:-}
src=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d /tmp/pami-remake.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
floor() {
    printf 'floor_lat %s: ' "$1"
    tools/pamirun/pamirun -n 2 tools/pami-bench/pami-bench am_lat --vs-ucx \
        --json --reps 3 --max-bytes 8 2>/dev/null |
        sed -n 's/.*"floor_lat".*"us": \([0-9.e+-]*\).*/\1/p' | tr '\n' ' '
    echo us
}
floor before
for n in 2 4 8; do
    # shellcheck disable=SC2086
    tools/pamirun/pamirun -n $n tools/pami-tune/pami-tune \
        --collectives allreduce,broadcast,allgather,alltoall,reduce_scatter,barrier \
        --types basic --shapes world --reps 15 --no-progress \
        ${PAMI_TUNE_ARGS:-} -o "$tmp/builtin-${n}x1.json"
    printf '%s tasks: ' $n
    tools/pami-tune/pami-tune --table "$tmp/builtin-${n}x1.json" | sed -n 2p
done
floor after
mean=$(tools/pami-tune/pami-tune --table "$tmp/builtin-2x1.json" |
       sed -n 's/^cpu: mean \([0-9.]*\),.*/\1/p')
if [ -z "$mean" ] || ! awk -v m="$mean" -v t="$min" 'BEGIN { exit !(m >= t) }'; then
    echo "remake-builtin: the 2-task sweep's mean cpu is ${mean:-unknown}," \
         "below $min: the machine was busy; docs/profiles left alone" >&2
    exit 1
fi
if [ "$add" = add ]; then
    for n in 2 4 8; do
        tools/pami-tune/pami-tune --merge \
            "$src/docs/profiles/builtin-${n}x1.json" \
            "$tmp/builtin-${n}x1.json" -o "$tmp/merged-${n}x1.json"
    done
    for n in 2 4 8; do
        cp "$tmp/merged-${n}x1.json" "$src/docs/profiles/builtin-${n}x1.json"
    done
    echo "remake-builtin: a round added to docs/profiles/builtin-{2,4,8}x1.json; run ninja"
    exit 0
fi
cp "$tmp"/builtin-2x1.json "$tmp"/builtin-4x1.json "$tmp"/builtin-8x1.json \
    "$src/docs/profiles/"
echo "remake-builtin: docs/profiles/builtin-{2,4,8}x1.json replaced; run ninja"
