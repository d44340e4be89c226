#!/bin/sh
# One run of the fault suite (docs/faults.md): starts fault_run WORKLOAD as
# NTASKS tasks under pamirun or mpirun, waits until every task runs the
# workload, kills a task chosen from SEED at a moment chosen from SEED, and
# checks:
#   - the launcher exits 0 (each survivor checked itself: a failure seen,
#     every callback exactly once, destroy within 1 s);
#   - every survivor saw the failure within 1 s of the kill (stop: within
#     PAMI_PEER_TIMEOUT plus 1 s);
#   - the job ended within 2 s of the kill (stop: of the moment the
#     survivors were through and the driver killed the stopped task);
#   - nothing of the job is left: no process, nothing named after the job
#     in /dev/shm or /tmp, pamirun's directory gone, no SysV segment made
#     by one of its processes.
# MODE: kill (SIGKILL), exit (the task _exit(0)s, by SIGUSR1), stop
# (SIGSTOP: a hung task), none (nobody is killed; fault_run --no-fault).
# Prints one line "fault: key=value ..." ending in "ok" or "FAIL: why".
# FAULT_SLACK adds that many seconds to every time bound (default 0).
#
#   fault_drive.sh pamirun|mpirun PAMIRUN FAULT_RUN WORKLOAD MODE NTASKS SEED
set -u

launcher=$1 pamirun=$2 prog=$3 workload=$4 mode=$5 n=$6 seed=$7
: "${PAMI_PEER_TIMEOUT:=500}"
export PAMI_PEER_TIMEOUT

dir=$(mktemp -d /tmp/pf.XXXXXX) || exit 1
lpid=
dog=
cleanup() {
    [ -n "$dog" ] && kill "$dog" 2>/dev/null
    [ -n "$lpid" ] && kill -9 "$lpid" 2>/dev/null
    for f in "$dir"/ready-*; do
        [ -f "$f" ] && kill -9 "$(cut -d' ' -f1 "$f")" 2>/dev/null
    done
    rm -rf "$dir"
}
trap cleanup EXIT

now() { date +%s.%N; }

# victim and delay (ms) from the seed
set -- $(awk -v s="$seed" -v n="$n" 'BEGIN { srand(s);
    printf "%d %d\n", int(rand() * n), int(rand() * 300) }')
victim=$1 delay_ms=$2
line="fault: launcher=$launcher workload=$workload mode=$mode n=$n seed=$seed victim=$victim delay_ms=$delay_ms"

fail() {
    echo "$line FAIL: $*"
    echo "--- launcher output:" >&2
    cat "$dir/out" >&2
    exit 1
}

args="$workload $dir"
[ "$mode" = none ] && args="$args --no-fault"
case $launcher in
pamirun)
    TMPDIR=$dir "$pamirun" -n "$n" --timeout 40 "$prog" $args \
        >"$dir/out" 2>&1 &
    ;;
mpirun)
    # --enable-recovery: Open MPI lets the survivors run on after a death
    # instead of killing them (its default).
    mpirun --allow-run-as-root --oversubscribe --enable-recovery \
        -np "$n" "$prog" $args >"$dir/out" 2>&1 &
    ;;
*) echo "usage: $0 pamirun|mpirun PAMIRUN FAULT_RUN WORKLOAD MODE N SEED" >&2
   exit 2 ;;
esac
lpid=$!
# Whatever happens, the launcher goes within 45 s (mpirun has no timeout
# of its own); the checks below then report it.
(
    trap 'kill "$nap" 2>/dev/null; exit 0' TERM
    sleep 45 &
    nap=$!
    wait "$nap" && kill -9 "$lpid"
) >/dev/null 2>&1 &
dog=$!

alive() { kill -0 "$lpid" 2>/dev/null; }
count() { ls "$dir" | grep -c "^$1-[0-9]*\$"; }

# Every task runs the workload (its first cycle, for cycle).
t0=$(now)
while [ "$(count ready)" -lt "$n" ]; do
    # A job without a fault may end between the count and this look:
    # count again before calling it early.
    alive || [ "$(count ready)" -ge "$n" ] ||
        fail "the job ended before every task was ready"
    awk -v a="$t0" -v b="$(now)" 'BEGIN { exit !(b - a > 30) }' &&
        fail "not every task was ready within 30 s"
    sleep 0.02
done
pids=$(cat "$dir"/ready-* | cut -d" " -f1 | tr "\n" " ")
jobid=$(cut -d' ' -f2 "$dir/ready-0")
vpid=$(cut -d' ' -f1 "$dir/ready-$victim")

sleep "$(awk -v d="$delay_ms" 'BEGIN { printf "%.3f", d / 1000 }')"
killed=$(now)
case $mode in
kill) kill -KILL "$vpid" ;;
exit) kill -USR1 "$vpid" ;;
stop) kill -STOP "$vpid" ;;
none) ;;
*) fail "unknown mode $mode" ;;
esac
# Announced only once the signal is sent: the victim must not see it
# (destroy: a victim that went into destroy with the others could let
# them all finish it before the signal landed).
echo "$killed" >"$dir/killed"

# stop: once every survivor is through, the hung task is killed.
released=$killed
if [ "$mode" = stop ]; then
    while [ "$(count result)" -lt $((n - 1)) ] && alive; do
        awk -v a="$killed" -v b="$(now)" 'BEGIN { exit !(b - a > 20) }' &&
            break
        sleep 0.01
    done
    released=$(now)
    kill -KILL "$vpid"
fi
wait "$lpid"
rc=$?
ended=$(now)
lpid=

[ "$rc" -eq 0 ] || fail "$launcher exited with $rc"
want=$n
[ "$mode" = none ] || want=$((n - 1))
[ "$(count result)" -eq "$want" ] ||
    fail "$(count result) result files, expected $want"

# Figures: worst detection and destroy over the survivors.
figs=$(cat "$dir"/result-* | awk -v k="$killed" -v mode="$mode" '
    { for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
      d = v["detected"] - k; if (d > dmax) dmax = d
      if (v["destroy"] > smax) smax = v["destroy"] }
    END { if (mode == "none") dmax = 0; printf "%.3f %.3f\n", dmax, smax }')
set -- $figs
detect=$1 destroy=$2
jobend=$(awk -v a="$released" -v b="$ended" 'BEGIN { printf "%.3f", b - a }')
line="$line detect_s=$detect destroy_s=$destroy end_s=$jobend"

# FAULT_SLACK (seconds, default 0) widens every bound: the short matrix
# of make test shares two cores with whatever else runs.
slack=${FAULT_SLACK:-0}
limit=$(awk -v s="$slack" 'BEGIN { print 1 + s }')
[ "$mode" = stop ] && limit=$(awk -v t="$PAMI_PEER_TIMEOUT" -v s="$slack" \
    'BEGIN { print t / 1000 + 1 + s }')
awk -v d="$detect" -v l="$limit" 'BEGIN { exit !(d > l) }' &&
    fail "a survivor saw the failure $detect s after the kill (limit $limit)"
awk -v d="$destroy" -v s="$slack" 'BEGIN { exit !(d > 1 + s) }' &&
    fail "a destroy took $destroy s (slack $slack s)"
[ "$mode" != none ] &&
    awk -v d="$jobend" -v s="$slack" 'BEGIN { exit !(d > 2 + s) }' &&
    fail "the job ended $jobend s after the kill (slack $slack s)"

# Nothing left behind.
for p in $pids; do
    kill -0 "$p" 2>/dev/null && fail "task process $p still runs"
done
ls /dev/shm /tmp 2>/dev/null | grep -F -- "$jobid" >/dev/null &&
    fail "left in /dev/shm or /tmp: $(ls /dev/shm /tmp | grep -F -- "$jobid")"
ls -d "$dir"/pamirun-* >/dev/null 2>&1 && fail "pamirun's directory is left"
if command -v ipcs >/dev/null; then
    seg=$(ipcs -m -p 2>/dev/null | awk -v p=" $pids " '
        $1 ~ /^[0-9]+$/ && index(p, " " $3 " ") { print $1 }')
    [ -z "$seg" ] || fail "SysV segments left: $seg"
fi
echo "$line ok"
exit 0
