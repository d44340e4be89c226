#!/bin/sh
# Runs mp_fault under pamirun with one task dying mid-exchange and checks
# what pamirun does about it: it exits with the victim's code (3, or 137
# for SIGKILL) soon after the death, names the victim on stderr, and no
# task of the job is left running.
#
#   mp_fault.sh PAMIRUN MP_FAULT exit|kill NTASKS
set -u

pamirun=$1
prog=$2
mode=$3
n=$4
victim=$((n - 1))

dir=$(mktemp -d "${TMPDIR:-/tmp}/mp-fault.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT

fail() {
    echo "mp_fault.sh ($mode, $n tasks): FAIL: $*" >&2
    echo "--- pamirun stderr:" >&2
    cat "$dir/err" >&2
    exit 1
}

now() {
    date +%s.%N
}

start=$(now)
"$pamirun" -n "$n" --timeout 60 "$prog" "$mode" "$dir" >"$dir/out" 2>"$dir/err"
rc=$?
end=$(now)

case $mode in
exit) want_rc=3; want_line="pamirun: rank $victim exited with code 3" ;;
kill) want_rc=137; want_line="pamirun: rank $victim killed by signal 9" ;;
*) echo "usage: $0 PAMIRUN MP_FAULT exit|kill NTASKS" >&2; exit 2 ;;
esac

[ "$rc" -eq "$want_rc" ] || fail "pamirun exited with $rc, expected $want_rc"
grep -qF "$want_line" "$dir/err" || fail "no '$want_line' on stderr"
[ -f "$dir/died" ] || fail "the victim never reached the point of dying"

# Every task was running the exchange.
for r in $(seq 0 $victim); do
    [ -f "$dir/pid-$r" ] || fail "task $r never started its exchange"
done

# pamirun ended the job within a few seconds of the death (it waits up to
# 2 s for SIGTERM before SIGKILL), and the whole run was short.
died=$(cat "$dir/died")
awk -v d="$died" -v e="$end" -v s="$start" 'BEGIN {
    if (e - d > 5.0) {
        printf "pamirun exited %.2f s after the death\n", e - d; exit 1
    }
    if (e - s > 30.0) { printf "the job took %.2f s\n", e - s; exit 1 }
    printf "pamirun exited %.2f s after the death (job %.2f s)\n", e - d, e - s
}' || fail "too slow"

# Nobody is left, and the survivors did not fail on their own.
for r in $(seq 0 $victim); do
    pid=$(cat "$dir/pid-$r")
    if kill -0 "$pid" 2>/dev/null; then
        fail "task $r (pid $pid) still runs after pamirun exited"
    fi
done
if grep -q "mp_fault: task [0-9]*: FAIL:" "$dir/err"; then
    fail "a surviving task failed by itself"
fi
# Only the victim is named.
if grep "^pamirun: rank" "$dir/err" | grep -vqF "$want_line"; then
    fail "pamirun named another rank"
fi
echo "ok: $want_line"
exit 0
