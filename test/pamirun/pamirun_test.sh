#!/bin/bash
# Runs pamirun on one scenario and checks its exit code, its output and
# that it left nothing behind (files in TMPDIR, shared-memory objects,
# live ranks).
#
#   pamirun_test.sh PAMIRUN RANK_HELPER SCENARIO [ARGS...]
set -u

PAMIRUN=$1
HELPER=$2
SCENARIO=$3
shift 3

work=$(mktemp -d "${TMPDIR:-/tmp}/pamirun-test-XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
export TMPDIR=$work/tmp PIDDIR=$work/pids
mkdir -p "$TMPDIR" "$PIDDIR"
: >"$work/out"
: >"$work/err"

fail() {
    echo "FAIL ($SCENARIO): $*" >&2
    echo "--- pamirun stdout" >&2
    head -c 4000 "$work/out" >&2
    echo "--- pamirun stderr" >&2
    head -c 4000 "$work/err" >&2
    exit 1
}

now_ms() { echo $(($(date +%s%N) / 1000000)); }

# run ARGS...: runs pamirun; sets rc and elapsed (ms).
run() {
    local t0
    t0=$(now_ms)
    "$PAMIRUN" "$@" >"$work/out" 2>"$work/err" </dev/null
    rc=$?
    elapsed=$(($(now_ms) - t0))
}

expect_rc() {
    [ "$rc" -eq "$1" ] || fail "exit code $rc, expected $1"
}

# expect_line FILE LINE: the exact line is in pamirun's out or err.
expect_line() {
    grep -qxF -- "$2" "$work/$1" || fail "no line '$2' in $1"
}

expect_no_match() {
    ! grep -qE -- "$2" "$work/$1" || fail "'$2' should not be in $1"
}

expect_lines() {
    local n
    n=$(grep -cE -- "$2" "$work/$1")
    [ "$n" -eq "$3" ] || fail "$n lines match '$2' in $1, expected $3"
}

expect_faster_than() {
    [ "$elapsed" -lt "$1" ] || fail "took ${elapsed} ms, limit $1 ms"
}

# (ipcs -m -i says "not found" with status 0.)
sysv_exists() { awk -v id="$1" '$2 == id { f = 1 } END { exit !f }' \
    /proc/sysvipc/shm; }

# Nothing of the job may survive it.
expect_clean() {
    local left pid f id
    left=$(ls -A "$TMPDIR")
    [ -z "$left" ] || fail "left in TMPDIR: $left"
    for f in "$PIDDIR"/*.pid; do
        [ -e "$f" ] || continue
        pid=$(cat "$f")
        ! kill -0 "$pid" 2>/dev/null || fail "rank process $pid still alive"
    done
    if [ -e "$PIDDIR/jobid" ]; then
        id=$(cat "$PIDDIR/jobid")
        [ -n "$id" ] || fail "empty job id"
        left=$(ls /dev/shm 2>/dev/null | grep -F "pami-$id")
        [ -z "$left" ] || fail "left in /dev/shm: $left"
    fi
    # The private SysV page a rank made and left is gone; the keyed one,
    # the user's, is still there (then removed here).
    for f in "$PIDDIR"/*.shm; do
        [ -e "$f" ] || continue
        read -r priv keyed <"$f"
        ! sysv_exists "$priv" ||
            fail "private SysV segment $priv of a dead rank is left"
        sysv_exists "$keyed" || fail "keyed SysV segment $keyed was removed"
        ipcrm -m "$keyed"
        rm -f "$f"
    done
}

scenario_allgather() {
    local n=$1 r
    run -n "$n" "$HELPER" allgather
    expect_rc 0
    for ((r = 0; r < n; r++)); do
        expect_line out "rank $r/$n allgather ok"
    done
    expect_lines out . "$n"
    expect_no_match err '^pamirun: rank'
    expect_clean
}

scenario_sessions() {
    local r
    run -n 4 "$HELPER" sessions
    expect_rc 0
    for r in 0 1 2 3; do
        expect_line out "rank $r sessions ok"
    done
    expect_clean
}

# When pamirun's stdout breaks, the ranks see SIGPIPE, as in a pipeline.
scenario_broken_pipe() {
    local t0
    t0=$(now_ms)
    "$PAMIRUN" -n 2 "$HELPER" flood 2>"$work/err" </dev/null |
        head -n 3 >"$work/out"
    rc=${PIPESTATUS[0]}
    elapsed=$(($(now_ms) - t0))
    expect_rc 141
    expect_lines out '^line [0-9]+ from [01]$' 3
    expect_lines err '^pamirun: rank [01] killed by signal 13' 1
    expect_faster_than 10000
    expect_clean
}

# Lines as the ranks wrote them; with --tag-output, behind "[rank] ".
scenario_output() {
    local r
    run -n 3 "$HELPER" print
    expect_rc 0
    for r in 0 1 2; do
        expect_line out "out line 1 from $r"
        expect_line out "out line 2 from $r"
        expect_line out "partial from $r"
        expect_line err "err line from $r"
    done
    expect_lines out . 9
    expect_lines err . 3
    expect_no_match out '^\['
    run --tag-output -n 3 "$HELPER" print
    expect_rc 0
    for r in 0 1 2; do
        expect_line out "[$r] out line 1 from $r"
        expect_line out "[$r] out line 2 from $r"
        expect_line out "[$r] partial from $r"
        expect_line err "[$r] err line from $r"
    done
    expect_lines out . 9
    expect_lines err . 3
    expect_clean
}

scenario_longline() {
    run -n 1 "$HELPER" longline 100000
    expect_rc 0
    expect_lines out . 2
    [ "$(head -n 1 "$work/out" | head -c 10)" = "abcdefghij" ] ||
        fail "long line does not start as written"
    [ "$(head -n 1 "$work/out" | wc -c)" -eq 100001 ] ||
        fail "long line has the wrong length"
    expect_line out "after"
    run --tag-output -n 1 "$HELPER" longline 100000
    expect_rc 0
    expect_lines out . 2
    [ "$(head -n 1 "$work/out" | head -c 10)" = "[0] abcdef" ] ||
        fail "long line lost its prefix"
    [ "$(head -n 1 "$work/out" | wc -c)" -eq 100005 ] ||
        fail "long line has the wrong length"
    expect_line out "[0] after"
    expect_clean
}

# Tagged, so each line names its rank; untagged, PAMI_OUTPUT_TAGGED is
# unset even when pamirun inherited it.
scenario_env() {
    local r jobid
    PAMI_OUTPUT_TAGGED=1 run -n 2 "$HELPER" env
    expect_rc 0
    expect_lines out '^tagged=unset$' 2
    run --tag-output -n 2 "$HELPER" env
    expect_rc 0
    jobid=$(sed -n 's/^\[0\] jobid=//p' "$work/out")
    [ -n "$jobid" ] || fail "no job id"
    for r in 0 1; do
        expect_line out "[$r] rank=$r"
        expect_line out "[$r] size=2"
        expect_line out "[$r] jobid=$jobid"
        expect_line out "[$r] stdin=eof"
        expect_line out "[$r] tagged=1"
        grep -qE "^\[$r\] socket=$TMPDIR/pamirun-[^/]+/[^/]+$" "$work/out" ||
            fail "rank $r socket is not in a private directory of TMPDIR"
    done
    expect_clean
}

scenario_exit_code() {
    run -n 4 "$HELPER" exit 2 3
    expect_rc 3
    expect_line err "pamirun: rank 2 exited with code 3"
    expect_lines err '^pamirun: rank' 1
    expect_faster_than 10000
    expect_clean
}

scenario_kill() {
    run -n 4 "$HELPER" kill 1
    expect_rc 137
    expect_line err "pamirun: rank 1 killed by signal 9 (Killed)"
    expect_lines err '^pamirun: rank' 1
    # The others sleep and take SIGTERM at once: no grace period needed.
    expect_faster_than 1900
    expect_clean
}

scenario_timeout() {
    run -n 2 --timeout 1 "$HELPER" sleep
    expect_rc 124
    expect_lines err '^pamirun: .*timeout' 1
    expect_lines out '^ready$' 2
    expect_faster_than 3000
    expect_clean
}

# Ranks that ignore SIGTERM get SIGKILL after the grace period.
scenario_grace() {
    run -n 2 --timeout 0.5 "$HELPER" ignore-term
    expect_rc 124
    [ "$elapsed" -ge 2400 ] || fail "SIGKILL came before the grace period"
    expect_faster_than 6000
    expect_clean
}

scenario_sigterm() {
    local pid i
    "$PAMIRUN" -n 3 "$HELPER" sleep >"$work/out" 2>"$work/err" </dev/null &
    pid=$!
    # Wait for the readiness lines, never a fixed sleep.
    for ((i = 0; i < 200; i++)); do
        [ "$(grep -c ready "$work/out")" -eq 3 ] && break
        sleep 0.05
    done
    [ "$(grep -c ready "$work/out")" -eq 3 ] || fail "ranks never got ready"
    kill -TERM "$pid"
    wait "$pid"
    rc=$?
    expect_rc 143
    expect_lines err '^pamirun: got' 1
    expect_clean
}

scenario_leave() {
    run -n 3 "$HELPER" leave 0
    expect_rc 4
    expect_lines err '^pamirun: rank [12] exited with code 4$' 1
    expect_clean
}

scenario_not_found() {
    run -n 2 "$work/no-such-program"
    expect_rc 127
    grep -q "^pamirun: cannot execute '$work/no-such-program'" \
        "$work/err" || fail "no 'cannot execute' message"
    expect_lines err '^pamirun: rank [01] exited with code 127$' 1
    printf 'not a program\n' >"$work/not-exec"
    chmod 0644 "$work/not-exec"
    run -n 1 "$work/not-exec"
    expect_rc 126
    expect_line err "pamirun: rank 0 exited with code 126"
    expect_clean
}

# Too few descriptors for the job: refused before any rank starts. Few
# but raisable: the job runs and the ranks see the original limit.
scenario_fd_limit() {
    (ulimit -n 40 && exec "$PAMIRUN" -n 100 "$HELPER" print) \
        >"$work/out" 2>"$work/err"
    rc=$?
    expect_rc 1
    expect_lines err '^pamirun: 100 ranks need about' 1
    expect_lines out . 0
    [ "$(ulimit -H -n)" = unlimited ] || [ "$(ulimit -H -n)" -ge 400 ] ||
        return 0
    (ulimit -S -n 40 && exec "$PAMIRUN" -n 100 sh -c 'ulimit -n') \
        >"$work/out" 2>"$work/err"
    rc=$?
    expect_rc 0
    expect_lines out '^40$' 100
    expect_clean
}

# A process outside the job floods the bootstrap socket (holding up to
# thousands of connections, some saying garbage) while the ranks keep
# making new sessions: pamirun, with only 128 descriptors, must keep
# serving them, shed the rest, and log only a few lines.
scenario_flood() {
    local flooder=$1 pid fpid sock i n made
    (ulimit -S -n 128 && exec "$PAMIRUN" -n 4 --timeout 40 "$HELPER" churn 3) \
        >"$work/out" 2>"$work/err" </dev/null &
    pid=$!
    sock=
    for ((i = 0; i < 400; i++)); do
        sock=$(ls "$TMPDIR"/pamirun-*/bootstrap.sock 2>/dev/null | head -n 1)
        [ -n "$sock" ] && break
        sleep 0.05
    done
    [ -n "$sock" ] || fail "no bootstrap socket"
    "$flooder" "$sock" 5 "$PIDDIR/go" >"$work/flood" 2>&1 &
    fpid=$!
    wait "$pid"
    rc=$?
    wait "$fpid" # it stops once the socket is gone
    cat "$work/flood" >>"$work/out"
    expect_rc 0
    # Served, not merely alive: without shedding, a flood leaves the
    # ranks a handful of sessions in 3 s; here they get hundreds.
    for i in 0 1 2 3; do
        n=$(sed -n "s/^rank $i churn ok: \([0-9]*\) sessions$/\1/p" "$work/out")
        [ -n "$n" ] || fail "rank $i did not finish its sessions"
        [ "$n" -ge 30 ] || fail "rank $i made only $n sessions in 3 s"
    done
    made=$(sed -n 's/^flood: \([0-9]*\) connections made.*/\1/p' "$work/flood")
    [ -n "$made" ] && [ "$made" -ge 1000 ] ||
        fail "the flood made only '${made}' connections"
    # The first refusal, then one line per 10 s at most, and a total.
    i=$(grep -c 'pamirun: bootstrap socket' "$work/err")
    [ "$i" -ge 1 ] && [ "$i" -le 3 ] || fail "$i lines about refusals"
    [ "$(wc -l <"$work/err")" -le 4 ] || fail "too many lines on stderr"
    expect_clean
}

# usage_case WHAT ARGS...: pamirun refuses with exit 2 and says WHAT.
usage_case() {
    local what=$1
    shift
    run "$@"
    expect_rc 2
    grep -qF -- "$what" "$work/err" || fail "no '$what' for: $*"
}

scenario_usage() {
    usage_case "missing -n" "$HELPER" print
    usage_case "missing -n"
    usage_case "got '0'" -n 0 "$HELPER" print
    usage_case "got 'abc'" -n abc "$HELPER" print
    usage_case "got '-1'" -n -1 "$HELPER" print
    usage_case "missing the program" -n 2
    usage_case "needs a value" -n
    usage_case "got '-3'" -n 2 --timeout -3 "$HELPER" print
    usage_case "unknown option '--bogus'" -n 2 --bogus "$HELPER" print
    run --help
    expect_rc 0
    grep -q '^usage: pamirun' "$work/out" || fail "--help prints no usage"
    # Options after the program belong to the program.
    run -np 1 -- "$HELPER" longline 3 -n 5
    expect_rc 0
    expect_line out "abc"
    expect_clean
}

"scenario_${SCENARIO//-/_}" "$@"
echo "ok: $SCENARIO $*"
