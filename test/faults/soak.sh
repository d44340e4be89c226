#!/bin/sh
# make soak: the fault suite's whole matrix (every workload x kill, exit,
# stop x pamirun, mpirun), SOAK_RUNS runs per cell with fresh seeds, then
# a table of detection, destroy and job-end times (median and max) per
# cell. Failures are listed with the command that replays each one.
#
#   soak.sh BUILD_DIR
# Environment: SOAK_RUNS (per cell, default 5), SOAK_TASKS (default 4),
# SOAK_SEED (the seed the run seeds come from; default: the time),
# SOAK_LAUNCHERS (default "pamirun mpirun"; mpirun is skipped when
# absent), PAMI_PEER_TIMEOUT (for stop, default 500 ms).
set -u

build=${1:?usage: soak.sh BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
drive="$here/fault_drive.sh"
pamirun="$build/tools/pamirun/pamirun"
prog="$build/test/faults/fault_run"
runs=${SOAK_RUNS:-5}
n=${SOAK_TASKS:-4}
master=${SOAK_SEED:-$(date +%s)}
launchers=${SOAK_LAUNCHERS:-pamirun mpirun}
: "${PAMI_PEER_TIMEOUT:=500}"
export PAMI_PEER_TIMEOUT

[ -x "$prog" ] || { echo "soak: $prog is not built" >&2; exit 2; }
log=$(mktemp /tmp/pami-soak.XXXXXX) || exit 1
# The launcher's output of each failed run is kept here (kept only when
# something failed).
keep=$(mktemp -d /tmp/pami-soak-failed.XXXXXX) || exit 1
trap 'rm -f "$log" "$keep/run.err"; rmdir "$keep" 2>/dev/null' EXIT

# UCX's shared-memory files directly in /dev/shm (pami's runs keep them
# in the job's own directory: docs/pamirun.md).
ucx_files() { ls /dev/shm 2>/dev/null | grep '^ucx_shm_posix_' || true; }

echo "soak: SOAK_SEED=$master, $runs runs per cell, $n tasks," \
     "PAMI_PEER_TIMEOUT=$PAMI_PEER_TIMEOUT"
i=0
for l in $launchers; do
    if [ "$l" = mpirun ] && ! command -v mpirun >/dev/null; then
        echo "soak: no mpirun, its cells are skipped"
        continue
    fi
    for w in am rndv barrier coll rma rma-shm svd cycle destroy; do
        for m in kill exit stop; do
            r=0
            while [ "$r" -lt "$runs" ]; do
                i=$((i + 1))
                r=$((r + 1))
                seed=$(( (master * 7919 + i * 104729) % 1000000007 ))
                before=$(ucx_files)
                out=$(sh "$drive" "$l" "$pamirun" "$prog" "$w" "$m" "$n" \
                      "$seed" 2>"$keep/run.err")
                [ -n "$out" ] || out="fault: launcher=$l workload=$w mode=$m n=$n seed=$seed FAIL: no output"
                # The drive finds what names the job; soak runs alone, so
                # it also sees files of UCX's that name no job.
                if [ -z "$before" ]; then
                    new=$(ucx_files)
                else
                    new=$(ucx_files | grep -vxF -e "$before" || true)
                fi
                [ -z "$new" ] || out="${out% ok} FAIL: left in /dev/shm: $(echo $new)"
                echo "$out" >>"$log"
                case $out in
                *" ok") printf . ;;
                *) printf F
                   mv "$keep/run.err" "$keep/$l-$w-$m-$seed.out" ;;
                esac
            done
        done
    done
done
echo

awk '
function med(a, k,   i, j, t, b) {
    for (i = 1; i <= k; i++) b[i] = a[i]
    for (i = 2; i <= k; i++)
        for (j = i; j > 1 && b[j - 1] > b[j]; j--) {
            t = b[j]; b[j] = b[j - 1]; b[j - 1] = t
        }
    return k == 0 ? 0 : (k % 2 ? b[(k + 1) / 2] : (b[k / 2] + b[k / 2 + 1]) / 2)
}
function mx(a, k,   i, m) { m = 0; for (i = 1; i <= k; i++) if (a[i] > m) m = a[i]; return m }
{
    delete v
    for (i = 2; i <= NF; i++) if (split($i, kv, "=") == 2) v[kv[1]] = kv[2]
    c = v["launcher"] " " v["workload"] " " v["mode"]
    if (!(c in runs)) order[++cells] = c
    runs[c]++
    if ($NF != "ok") { fails[c]++; bad[++nbad] = $0 }
    # A failed run counts in the figures too when it got as far as them.
    if (!("detect_s" in v)) next
    k = ++ok[c]
    det[c, k] = v["detect_s"]; des[c, k] = v["destroy_s"]; end[c, k] = v["end_s"]
}
END {
    printf "| launcher | workload | mode | runs | failed | detect median | detect max | destroy median | destroy max | job end median | job end max |\n"
    printf "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n"
    for (j = 1; j <= cells; j++) {
        c = order[j]; k = ok[c] + 0
        for (i = 1; i <= k; i++) { a[i] = det[c, i]; b[i] = des[c, i]; e[i] = end[c, i] }
        split(c, p, " ")
        printf "| %s | %s | %s | %d | %d | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f |\n",
            p[1], p[2], p[3], runs[c], fails[c] + 0, med(a, k), mx(a, k),
            med(b, k), mx(b, k), med(e, k), mx(e, k)
        total += runs[c]; tfail += fails[c]
    }
    printf "\n%d runs, %d failed (times in seconds, over every run that got as far as measuring, failed ones included; stop: detection from the SIGSTOP, job end from the kill of the stopped task)\n", total, tfail
    for (i = 1; i <= nbad; i++) print "FAILED: " bad[i]
    exit tfail > 0
}' "$log"
rc=$?
if [ "$rc" -ne 0 ]; then
    echo "replay one with: PAMI_PEER_TIMEOUT=$PAMI_PEER_TIMEOUT sh $drive" \
         "LAUNCHER $pamirun $prog WORKLOAD MODE $n SEED"
    echo "the launchers' output of the failed runs: $keep"
fi
exit "$rc"
