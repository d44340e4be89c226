#!/usr/bin/env python3
"""Runs a pami-bench command with --json and checks what it printed.

    check_json.py [--ucx] -- pamirun -n 2 pami-bench --json ...
    check_json.py --group LINE... [--mpi] -- pamirun -n 4 pami-bench barrier --json ...
    check_json.py --coll TEST... --bytes B... [--mpi] -- pamirun -n 4 pami-bench allreduce --json ...
    check_json.py --burst RANKS MIN_RATIO -- pamirun -n RANKS pami-bench burst_oversub --json ...
    check_json.py --footprint RANKS -- pamirun -n RANKS pami-bench footprint --json ...

Fails (exit 1) when the command fails, when a line of its output is not a
JSON object, when a test printed no line, when a field is missing or has
the wrong type, when a median lies outside its spread, or when the ucx
(or, for group tests, mpi) values and the ratio are missing with --ucx
(--mpi), or present without it. With --ucx (the two tasks share a node)
the floor_lat and floor_rate lines must be there and every am_lat line
must carry vs_floor, and every put_lat_shm and rmw_lat_shm line a
positive ucx_private_us (UCP on the private buffers; absent without
--ucx). --group names the lines a group run must
print (e.g. barrier_packets). --coll names collective tests (allreduce,
bcast, allgather, alltoall, reduce_scatter): every line must belong to one
of them (registry name of its collective, e.g. allreduce_ring, or
<collective>_auto) with that collective's mpi_op, and for each of them and
each size given with --bytes there must be an AUTO line and at least one
line of a named algorithm. --burst wants exactly one burst_oversub line
with exactly its fields, for RANKS tasks, positive rates, ratio =
advance / wait, and ratio at least MIN_RATIO. --footprint wants exactly
one footprint line of pami for RANKS tasks with exactly its fields and
0 < vmhwm_min_kib <= vmhwm_max_kib.
"""
import json
import re
import subprocess
import sys

TESTS = {
    "am_lat": "lat_us",
    "am_rate": "rate_mps",
    "send_bw": "bw_gbps",
    "put_lat": "lat_us",
    "put_bw": "bw_gbps",
    "get_bw": "bw_gbps",
    "rmw_lat": "lat_us",
    "put_lat_shm": "lat_us",
    "rmw_lat_shm": "lat_us",
}
# Lines that also carry UCP's figure on the private buffers with --ucx.
PRIVATE = ("put_lat_shm", "rmw_lat_shm")
# Collective tests: the registry's prefix of their lines, their MPI call,
# whether they reduce doubles.
COLLS = {
    "allreduce": ("allreduce", "MPI_Allreduce", True),
    "bcast": ("broadcast", "MPI_Bcast", False),
    "allgather": ("allgather", "MPI_Allgather", False),
    "alltoall": ("alltoall", "MPI_Alltoall", False),
    "reduce_scatter": ("reduce_scatter", "MPI_Reduce_scatter_block", True),
}
PREFIX = re.compile(r"^\[\d+\] ")  # pamirun --tag-output's prefix


def number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def check_values(obj, where, ref, with_ref, flag, errors):
    """pami's median and spread, and ref's with the ratio pami / ref when
    with_ref, else ref's fields null (flag names the option)."""
    for side in ["pami"] + ([ref] if with_ref else []):
        med, lo, hi = obj[side], obj[side + "_min"], obj[side + "_max"]
        if not (number(med) and number(lo) and number(hi)):
            errors.append("%s: %s has no value" % (where, side))
        elif not (0 < lo <= med <= hi):
            errors.append("%s: %s median %g outside [%g, %g]"
                          % (where, side, med, lo, hi))
    if with_ref:
        if not number(obj["ratio"]) or obj["ratio"] <= 0:
            errors.append("%s: no ratio" % where)
        elif number(obj["pami"]) and number(obj[ref]) and obj[ref] > 0:
            want = obj["pami"] / obj[ref]
            if abs(obj["ratio"] - want) > 1e-3 * want:
                errors.append("%s: ratio %g is not pami / %s (%g)"
                              % (where, obj["ratio"], ref, want))
    else:
        for key in (ref, ref + "_min", ref + "_max", "ratio"):
            if obj[key] is not None:
                errors.append("%s: %s should be null without %s"
                              % (where, key, flag))


# The floor's lines carry exactly these fields (and a positive value).
FLOOR = {"floor_lat": "us", "floor_rate": "msgs_per_s"}


def check_floor_line(obj, errors):
    test = obj["test"]
    want = {"test", "bytes", FLOOR[test]}
    if set(obj) != want:
        errors.append("%s: fields %s, expected %s"
                      % (test, sorted(obj), sorted(want)))
        return
    if obj["bytes"] != 8 or not number(obj[FLOOR[test]]) or \
            obj[FLOOR[test]] <= 0:
        errors.append("%s: bad bytes or value" % test)


def check_line(obj, ucx, errors):
    where = "%s %s B" % (obj.get("test"), obj.get("bytes"))
    if obj.get("test") in FLOOR:
        if not ucx:
            errors.append("%s: a floor line without --vs-ucx" % where)
        check_floor_line(obj, errors)
        return
    for key in ("test", "bytes", "metric", "pami", "ucx", "ratio",
                "pami_min", "pami_max", "ucx_min", "ucx_max"):
        if key not in obj:
            errors.append("%s: no field '%s'" % (where, key))
            return
    test = obj["test"]
    base = "send_bw" if test == "send_bw_get" else test
    if base not in TESTS:
        errors.append("%s: unknown test" % where)
        return
    if obj["metric"] != TESTS[base]:
        errors.append("%s: metric %r, expected %r"
                      % (where, obj["metric"], TESTS[base]))
    if not isinstance(obj["bytes"], int) or obj["bytes"] <= 0:
        errors.append("%s: bad bytes" % where)
    check_values(obj, where, "ucx", ucx, "--vs-ucx", errors)
    # The two tasks of these runs share a node: with --vs-ucx every
    # am_lat line carries its ratio to the floor beside it.
    if test == "am_lat" and ucx:
        if not number(obj.get("vs_floor")) or obj["vs_floor"] <= 0:
            errors.append("%s: no vs_floor" % where)
    elif "vs_floor" in obj:
        errors.append("%s: vs_floor outside an am_lat line with --vs-ucx"
                      % where)
    if test in PRIVATE and ucx:
        if not number(obj.get("ucx_private_us")) or \
                obj["ucx_private_us"] <= 0:
            errors.append("%s: no ucx_private_us" % where)
    elif "ucx_private_us" in obj:
        errors.append("%s: ucx_private_us outside a *_shm line with "
                      "--vs-ucx" % where)
    if ucx and not obj.get("ucx_op"):
        errors.append("%s: no ucx_op" % where)


def check_group_line(obj, mpi, errors):
    where = "%s %s B" % (obj.get("test"), obj.get("bytes"))
    for key in ("test", "bytes", "metric", "tasks", "pami", "pami_min",
                "pami_max", "ucx", "mpi", "mpi_min", "mpi_max", "ratio"):
        if key not in obj:
            errors.append("%s: no field '%s'" % (where, key))
            return
    if obj["metric"] != "lat_us":
        errors.append("%s: metric %r, expected 'lat_us'" % (where, obj["metric"]))
    if not isinstance(obj["tasks"], int) or obj["tasks"] < 1:
        errors.append("%s: bad tasks" % where)
    if obj["ucx"] is not None:
        errors.append("%s: ucx should be null in a group line" % where)
    check_values(obj, where, "mpi", mpi, "--vs-mpi", errors)


def coll_of(test, colls):
    """The collective test a line belongs to, or None."""
    for name in colls:
        prefix = COLLS[name][0]
        # allgatherv_ring and alltoallv_pairwise do not match: the "_"
        if test.startswith(prefix + "_"):
            return name
    return None


def check_coll_line(obj, colls, mpi, errors):
    where = "%s %s B" % (obj.get("test"), obj.get("bytes"))
    name = coll_of(str(obj.get("test")), colls)
    if name is None:
        errors.append("%s: not a line of %s" % (where, ", ".join(colls)))
        return None
    _, mpi_op, reduce = COLLS[name]
    if not isinstance(obj["bytes"], int) or obj["bytes"] <= 0:
        errors.append("%s: bad bytes" % where)
    elif reduce and obj["bytes"] % 8 != 0:
        errors.append("%s: not a whole number of doubles" % where)
    for key in ("ops", "reps"):
        if not isinstance(obj.get(key), int) or obj[key] < 1:
            errors.append("%s: bad %s" % (where, key))
    if mpi and obj.get("mpi_op") != mpi_op:
        errors.append("%s: mpi_op %r, expected %r"
                      % (where, obj.get("mpi_op"), mpi_op))
    return name


BURST = {"test", "ranks", "advance_msgs_per_s", "wait_msgs_per_s", "ratio"}


def check_burst(lines, ranks, min_ratio, errors):
    if len(lines) != 1:
        errors.append("burst_oversub: %d lines, expected 1" % len(lines))
        return
    obj = lines[0]
    if not isinstance(obj, dict) or set(obj) != BURST:
        errors.append("burst_oversub: fields %s, expected %s"
                      % (sorted(obj) if isinstance(obj, dict) else obj,
                         sorted(BURST)))
        return
    adv, wait = obj["advance_msgs_per_s"], obj["wait_msgs_per_s"]
    if obj["test"] != "burst_oversub" or obj["ranks"] != ranks:
        errors.append("burst_oversub: test %r ranks %r" % (obj["test"],
                                                           obj["ranks"]))
    elif not (number(adv) and number(wait) and adv > 0 and wait > 0):
        errors.append("burst_oversub: rates %r %r" % (adv, wait))
    elif abs(obj["ratio"] - adv / wait) > 1e-3 * adv / wait:
        errors.append("burst_oversub: ratio %r is not advance / wait"
                      % obj["ratio"])
    elif obj["ratio"] < min_ratio:
        errors.append("burst_oversub: ratio %.3f below %.3f: the advance "
                      "retry loop collapses" % (obj["ratio"], min_ratio))


FOOTPRINT = {"test", "library", "ranks", "vmhwm_max_kib", "vmhwm_min_kib",
             "alltoalls", "block_bytes"}


def check_footprint(lines, ranks, errors):
    if len(lines) != 1:
        errors.append("footprint: %d lines, expected 1" % len(lines))
        return
    obj = lines[0]
    if not isinstance(obj, dict) or set(obj) != FOOTPRINT:
        errors.append("footprint: fields %s, expected %s"
                      % (sorted(obj) if isinstance(obj, dict) else obj,
                         sorted(FOOTPRINT)))
        return
    if obj["test"] != "footprint" or obj["library"] != "pami" or \
            obj["ranks"] != ranks:
        errors.append("footprint: test %r library %r ranks %r"
                      % (obj["test"], obj["library"], obj["ranks"]))
    lo, hi = obj["vmhwm_min_kib"], obj["vmhwm_max_kib"]
    if not (isinstance(lo, int) and isinstance(hi, int) and 0 < lo <= hi):
        errors.append("footprint: VmHWM %r .. %r" % (lo, hi))
    if not (isinstance(obj["alltoalls"], int) and obj["alltoalls"] > 0):
        errors.append("footprint: alltoalls %r" % obj["alltoalls"])


def main(argv):
    if argv and argv[0] in ("--burst", "--footprint"):
        burst = argv[0] == "--burst"
        skip = 3 if burst else 2
        if len(argv) <= skip + 1 or argv[skip] != "--":
            print(__doc__, file=sys.stderr)
            return 2
        ranks = int(argv[1])
        min_ratio = float(argv[2]) if burst else 0
        proc = subprocess.run([str(a) for a in argv[skip + 1:]],
                              stdout=subprocess.PIPE, universal_newlines=True)
        sys.stdout.write(proc.stdout)
        errors = [] if proc.returncode == 0 else \
            ["command exited with %d" % proc.returncode]
        lines = []
        for raw in proc.stdout.splitlines():
            line = PREFIX.sub("", raw).strip()
            if line:
                try:
                    lines.append(json.loads(line))
                except ValueError:
                    errors.append("not JSON: %r" % raw)
        if burst:
            check_burst(lines, ranks, min_ratio, errors)
        else:
            check_footprint(lines, ranks, errors)
        for e in errors:
            print("check_json: " + e, file=sys.stderr)
        return 1 if errors else 0
    ucx = mpi = False
    group = []
    colls = []
    sizes = []
    into = group
    while argv and argv[0] != "--":
        if argv[0] == "--ucx":
            ucx = True
        elif argv[0] == "--mpi":
            mpi = True
        elif argv[0] == "--group":
            into = group
        elif argv[0] == "--coll":
            into = colls
        elif argv[0] == "--bytes":
            into = sizes
        elif into is colls and argv[0] not in COLLS:
            print("check_json: unknown collective test %r" % argv[0],
                  file=sys.stderr)
            return 2
        elif into is sizes:
            sizes.append(int(argv[0]))
        else:
            into.append(argv[0])
        argv = argv[1:]
    if not argv or argv[0] != "--" or len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    cmd = [str(a) for a in argv[1:]]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, universal_newlines=True)
    sys.stdout.write(proc.stdout)
    errors = []
    if proc.returncode != 0:
        errors.append("command exited with %d" % proc.returncode)

    seen = {}
    per_coll = {}
    for raw in proc.stdout.splitlines():
        line = PREFIX.sub("", raw).strip()
        if not line:
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            errors.append("not JSON: %r" % raw)
            continue
        if not isinstance(obj, dict):
            errors.append("not a JSON object: %r" % raw)
            continue
        if group or colls:
            check_group_line(obj, mpi, errors)
            if colls and "test" in obj and "bytes" in obj:
                name = check_coll_line(obj, colls, mpi, errors)
                if name is not None:
                    per_coll.setdefault((name, obj["bytes"]), []).append(
                        obj["test"])
        else:
            check_line(obj, ucx, errors)
        seen.setdefault(obj.get("test"), []).append(obj.get("bytes"))

    for name in colls:
        auto = COLLS[name][0] + "_auto"
        for b in sizes:
            lines = per_coll.get((name, b), [])
            if auto not in lines:
                errors.append("%s %d B: no %s line" % (name, b, auto))
            if not [t for t in lines if t != auto]:
                errors.append("%s %d B: no line of a named algorithm"
                              % (name, b))
            dup = set(t for t in lines if lines.count(t) > 1)
            if dup:
                errors.append("%s %d B: repeated lines %s"
                              % (name, b, sorted(dup)))
    if colls:
        wanted = group
    elif group:
        wanted = group
    else:
        wanted = list(TESTS) + (["send_bw_get"] + list(FLOOR) if ucx
                                else [])
    for test in wanted:
        if test not in seen:
            errors.append("%s printed no line" % test)
    sizes = seen.get("send_bw", [])
    if sizes and not (min(sizes) < 65536 <= max(sizes)):
        errors.append("send_bw sizes %s do not cross 64 KiB" % sizes)

    for e in errors:
        print("check_json: " + e, file=sys.stderr)
    if errors:
        return 1
    print("check_json: %d lines, %d tests, all fields present"
          % (sum(len(v) for v in seen.values()), len(seen)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
