#!/bin/sh
# A task of the job is killed (SIGKILL) while the node's leader waits for
# it to attach, so the region and the register still have their names in
# /dev/shm. pamirun must exit 137 naming the victim, and nothing named
# /dev/shm/pami-<job id>* may be left once it exited.
#
#   shmb_kill.sh PAMIRUN SHMB_TEST NTASKS
set -u

pamirun=$1
prog=$2
n=$3
victim=$((n - 1))

dir=$(mktemp -d "${TMPDIR:-/tmp}/shmb-kill.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT

fail() {
    echo "shmb_kill.sh ($n tasks): FAIL: $*" >&2
    echo "--- pamirun stderr:" >&2
    cat "$dir/err" >&2
    exit 1
}

"$pamirun" -n "$n" --timeout 30 "$prog" kill "$dir" >"$dir/out" 2>"$dir/err"
rc=$?

[ "$rc" -eq 137 ] || fail "pamirun exited with $rc, expected 137"
grep -qF "pamirun: rank $victim killed by signal 9" "$dir/err" ||
    fail "pamirun did not name rank $victim"
[ -f "$dir/died" ] || fail "the victim died before the objects existed"
[ -s "$dir/jobid" ] || fail "no job id written"
id=$(cat "$dir/jobid")
left=$(ls /dev/shm 2>/dev/null | grep -F "pami-$id")
[ -z "$left" ] || fail "left in /dev/shm: $left"
if grep -q "shmb_test: task [0-9]*: FAIL:" "$dir/err"; then
    fail "a task failed by itself"
fi
echo "ok: job $id left nothing in /dev/shm"
exit 0
