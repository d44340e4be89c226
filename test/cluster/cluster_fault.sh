#!/bin/sh
# A node dies, its link is cut, or its ranks stop (SIGSTOP), in the middle
# of cluster_fault's message stream on a simulated cluster (cluster.sh);
# checks that the
# tasks that live on see PAMI_PEER_FAILED for the other side within
# DETECT seconds of the fault, finish and exit by themselves. Skipped (77)
# where no cluster can be made.
#
#   cluster_fault.sh kill|cut|stop|stop1 NODES PER NODE DETECT CLUSTER_FAULT [mixed]
#
# mixed: the stream carries rendezvous messages too (default: eager only).
# kill: every process of node NODE (its ranks and mpirun's daemon there)
# gets SIGKILL. cut: NODE's port on the bridge goes down; everything keeps
# running on both sides. stop: every rank of NODE gets SIGSTOP (a hung
# node: the kernel still answers TCP for it); DETECT should then be
# PAMI_PEER_TIMEOUT + 1 s. stop1: only NODE's first rank gets SIGSTOP;
# the others, its own node's included, must see it fail. NODES nodes of PER ranks each, ranks in blocks.
#
# mpirun runs with --enable-recovery so that it lets the others run on
# after a death instead of killing them; Open MPI 4.1's mpirun then does
# not exit by itself once they are done, so this script ends the job after
# checking that every rank that lived on exited.
set -u

here=$(cd "$(dirname "$0")" && pwd)
cluster=$here/cluster.sh
[ $# -eq 6 ] || [ $# -eq 7 ] || { echo "usage: see the head of $0" >&2; exit 2; }
mode=$1 nodes=$2 per=$3 victim=$4 detect=$5 prog=$6 stream=${7:-eager}
case $mode in kill | cut | stop | stop1) ;; *) echo "kill, cut or stop" >&2; exit 2 ;; esac

"$cluster" check || exit $?

n=$((nodes * per))
list=""
t=0
while [ $t -lt $n ]; do
    list="$list${list:+,}$((t / per))"
    t=$((t + 1))
done

name=f$$
dir=$(mktemp -d "${TMPDIR:-/tmp}/cluster-fault.XXXXXX") || exit 1
trap '"$cluster" down "$name"; rm -rf "$dir"' EXIT
trap 'exit 1' INT TERM HUP
"$cluster" up "$name" "$nodes" $$ >/dev/null || exit 1

fail() {
    echo "cluster_fault.sh ($mode node$victim, $nodes x $per): FAIL: $*" >&2
    echo "--- mpirun output:" >&2
    cat "$dir/out" >&2
    for f in "$dir"/log-*; do
        [ -s "$f" ] || continue
        echo "--- output of task ${f##*-}:" >&2
        cat "$f" >&2
    done
    exit 1
}

now() {
    date +%s.%N
}

count() {
    ls "$dir" | grep -c "^$1-[0-9]*\$"
}

# The ranks get the caller's PAMI_, UCX_ (UCX_LOG_LEVEL to look into a
# run) and sanitizer variables.
xs=""
for v in $(env | sed -n 's/^\(\(UCX\|PAMI\|ASAN\|UBSAN\|LSAN\)_[A-Z_]*\)=.*/\1/p'); do
    case $v in PAMI_CLUSTER_*) continue ;; esac
    xs="$xs -x $v"
done
# shellcheck disable=SC2086 # xs is a list of words
"$cluster" mpirun "$name" --enable-recovery --timeout 120 -np "$n" \
    --map-by "ppr:$per:node" $xs "$prog" "$dir" "$victim" "$mode" "$stream" \
    --expect-bootstrap=pmix --expect-size="$n" --expect-nodes="$list" \
    >"$dir/out" 2>&1 &
job=$!

# Every rank streams.
deadline=$(($(date +%s) + 60))
while [ "$(count ready)" -lt "$n" ]; do
    kill -0 $job 2>/dev/null || fail "mpirun ended before all ranks were ready"
    [ "$(date +%s)" -lt $deadline ] || fail "ranks not ready after 60 s"
    sleep 0.1
done
sleep 0.3

# The ranks of the other nodes must see the failure (see cluster_fault.c
# for the cut node's own).
# faulty: whether task $1 is on the side of the fault.
faulty() {
    if [ "$mode" = stop1 ]; then
        [ "$1" -eq $((victim * per)) ]
    else
        [ $(($1 / per)) -eq "$victim" ]
    fi
}
survivors=""
t=0
while [ $t -lt $n ]; do
    faulty $t || survivors="$survivors $t"
    t=$((t + 1))
done

fault=$(now)
if [ "$mode" = kill ]; then
    "$cluster" kill "$name" "node$victim"
elif [ "$mode" = stop ] || [ "$mode" = stop1 ]; then
    t=0
    while [ $t -lt $n ]; do
        if faulty $t; then
            kill -STOP "$(cat "$dir/ready-$t")" || exit 1
        fi
        t=$((t + 1))
    done
else
    "$cluster" cut "$name" "node$victim"
fi || fail "cannot $mode node$victim"

# Each survivor detects, finishes and exits.
deadline=$(($(date +%s) + 90))
for t in $survivors; do
    while [ ! -f "$dir/done-$t" ]; do
        [ "$(date +%s)" -lt $deadline ] || fail "task $t not done after 90 s"
        if ! kill -0 "$(cat "$dir/ready-$t")" 2>/dev/null; then
            [ -f "$dir/done-$t" ] || fail "task $t exited without finishing"
        fi
        sleep 0.1
    done
done
for t in $survivors; do
    # Gone, or a zombie (exited; its daemon has not reaped it yet).
    pid=$(cat "$dir/ready-$t")
    i=0
    while :; do
        state=$(sed -n 's/^State:[[:space:]]*\([A-Z]\).*/\1/p' \
                "/proc/$pid/status" 2>/dev/null)
        [ -n "$state" ] && [ "$state" != Z ] || break
        [ $i -lt 50 ] || fail "task $t (pid $pid) still runs 5 s after it was done"
        sleep 0.1
        i=$((i + 1))
    done
done
if grep -q "FAIL:" "$dir/out"; then
    fail "a rank failed"
fi

# Detection times against the fault, and destroy times: the survivors'
# files only. A task behind a cut link may be writing its own (it sees
# the others fail too, through a temporary file renamed into place).
detect_files="" done_files=""
for t in $survivors; do
    detect_files="$detect_files $dir/detect-$t"
    done_files="$done_files $dir/done-$t"
done
# FAULT_SLACK (seconds, default 0) widens the bound: the sanitizer build
# runs every task several times slower (test/cluster/meson.build).
bound=$(awk -v d="$detect" -v s="${FAULT_SLACK:-0}" 'BEGIN { print d + s }')
# shellcheck disable=SC2086 # lists of paths without blanks (mktemp -d)
awk -v f="$fault" -v bound="$bound" -v mode="$mode" -v node="$victim" '
    { d = $2 - f; if (d > max) max = d; if (min == "" || d < min) min = d
      sum += d; k++
      if (d > bound) {
          t = FILENAME; sub(/.*-/, "", t)
          printf "cluster_fault.sh: task %s saw task %s fail %.3f s after " \
                 "the fault\n", t, $1, d
      } }
    END {
        printf "cluster_fault.sh: %s node%d: %d detections, %.3f s to " \
               "%.3f s after the fault (mean %.3f s)\n", mode, node, k,
               min, max, sum / k
        if (k == 0 || max > bound) {
            printf "cluster_fault.sh: slower than %s s\n", bound; exit 1
        }
    }' $detect_files || fail "detection too slow"
# shellcheck disable=SC2086 # lists of paths without blanks (mktemp -d)
cat $done_files | awk '{ if ($1 > max) max = $1 }
    END { printf "cluster_fault.sh: pami_client_destroy took at most " \
                 "%.3f s\n", max }'
exit 0
