#!/bin/sh
# Runs one test program of the mp, collectives or protocols suites across
# the nodes of a simulated cluster made for this run (cluster.sh), started
# by mpirun, and removes the cluster afterwards, also on failure or when
# killed. Skipped (77) where no cluster can be made.
#
#   cluster_test.sh [--timeout S] [--plain] [-x VAR=VALUE]... NODES PER
#                   block|cyclic PROGRAM ARGS...
#
# NODES nodes of PER ranks each. block: ranks 0..PER-1 on node0, the next
# PER on node1...; cyclic: rank r on node (r mod NODES). The program gets
# --expect-bootstrap=pmix --expect-size=N --expect-nodes=LIST (mp_util.h):
# it fails unless pami reports exactly that node layout; --plain leaves
# them out, for a program that takes no such options. -x sets a
# variable in the ranks' environment. mpirun's --timeout (default 60 s)
# ends a hung job.
set -u

here=$(cd "$(dirname "$0")" && pwd)
cluster=$here/cluster.sh
timeout=60
xs=""
expect=1
while [ $# -gt 0 ]; do
    case $1 in
    --timeout) timeout=$2; shift 2 ;;
    -x) xs="$xs -x $2"; shift 2 ;;
    --plain) expect=0; shift ;;
    *) break ;;
    esac
done
[ $# -ge 4 ] || { echo "usage: see the head of $0" >&2; exit 2; }
nodes=$1 per=$2 map=$3
shift 3

"$cluster" check || exit $?

n=$((nodes * per))
case $map in
block) mapping="ppr:$per:node" ;;
cyclic) mapping=node ;;
*) echo "cluster_test.sh: map is block or cyclic" >&2; exit 2 ;;
esac
list=""
t=0
while [ $t -lt $n ]; do
    if [ "$map" = block ]; then nd=$((t / per)); else nd=$((t % nodes)); fi
    list="$list${list:+,}$nd"
    t=$((t + 1))
done

name=t$$
trap '"$cluster" down "$name"' EXIT
trap 'exit 1' INT TERM HUP
"$cluster" up "$name" "$nodes" $$ >/dev/null || exit 1

# Sanitizer and pami settings of the test reach the ranks by name.
for v in $(env | sed -n 's/^\(\(PAMI\|ASAN\|UBSAN\|LSAN\)_[A-Z_]*\)=.*/\1/p'); do
    case $v in PAMI_CLUSTER_*) continue ;; esac
    xs="$xs -x $v"
done

[ $expect -eq 1 ] && set -- "$@" --expect-bootstrap=pmix \
    --expect-size="$n" --expect-nodes="$list"
start=$(date +%s.%N)
# shellcheck disable=SC2086 # xs is a list of words
"$cluster" mpirun "$name" --timeout "$timeout" -np "$n" --map-by "$mapping" \
    $xs "$@"
rc=$?
end=$(date +%s.%N)
awk -v s="$start" -v e="$end" -v nodes="$nodes" -v n="$n" -v m="$map" \
    -v rc="$rc" 'BEGIN {
    printf "cluster_test.sh: %d ranks on %d nodes (%s): exit %d in %.2f s\n",
           n, nodes, m, rc, e - s }'
exit $rc
