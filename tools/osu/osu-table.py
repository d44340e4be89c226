#!/usr/bin/env python3
"""Tables the OSU OpenSHMEM results of two libraries measured in turns.

    osu-table.py PAMI_RUNS REF_RUNS [--sizes 8,1024,...]

PAMI_RUNS and REF_RUNS are folders holding one subfolder per repetition,
each with the NAME[-ARG].out files that `osu-shmem.sh run` writes (with
OSU_RESULTS set to the subfolder). For every benchmark, size (or atomic
operation) and library it takes the median over the repetitions, and
prints a markdown table with the spread (min..max) and the ratio
pami / reference. Latencies are in us (lower is better); message rates
in messages/s and the atomics' rates are left out (their latency column
is used).
"""
import argparse
import os
import statistics
import sys


def parse(path):
    """{row key: value} of one .out file: size -> latency (or rate), or
    operation name -> latency for the atomics."""
    rows = {}
    with open(path, errors="replace") as f:
        lines = f.read().splitlines()
    atomics = any("Atomic" in line for line in lines[:3])
    for line in lines:
        if not line or line.startswith("#"):
            continue
        parts = line.split()
        try:
            if atomics and len(parts) == 3:
                rows[parts[0]] = float(parts[2])
            elif len(parts) == 2:
                rows[int(parts[0])] = float(parts[1])
            elif len(parts) == 1 and not rows:
                rows[0] = float(parts[0])  # barrier: one number
        except ValueError:
            continue
    return rows


def collect(folder):
    """{bench: {key: [values over repetitions]}}"""
    out = {}
    for rep in sorted(os.listdir(folder)):
        d = os.path.join(folder, rep)
        if not os.path.isdir(d):
            continue
        for name in os.listdir(d):
            if not name.endswith(".out"):
                continue
            bench = name[:-4].replace("osu_oshm_", "")
            for key, val in parse(os.path.join(d, name)).items():
                out.setdefault(bench, {}).setdefault(key, []).append(val)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("pami")
    ap.add_argument("ref")
    ap.add_argument("--sizes", default="0,4,8,64,1024,65536,1048576",
                    help="sizes to show (0: the barrier's one line)")
    a = ap.parse_args()
    sizes = {int(s) for s in a.sizes.split(",")}
    pami, ref = collect(a.pami), collect(a.ref)
    print("| benchmark | size or op | unit | pami median [min..max] | "
          "reference median [min..max] | pami / ref | runs |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for bench in sorted(set(pami) | set(ref)):
        p, r = pami.get(bench, {}), ref.get(bench, {})
        rate = "_mr" in bench
        unit = "msg/s" if rate else "us"
        keys = sorted(set(p) | set(r), key=lambda k: (isinstance(k, str), k))
        for key in keys:
            if isinstance(key, int) and key not in sizes:
                continue
            pv, rv = p.get(key, []), r.get(key, [])

            def cell(v):
                if not v:
                    return "failed"
                fmt = "{:.0f}" if rate else "{:.2f}"
                return (fmt.format(statistics.median(v)) + " [" +
                        fmt.format(min(v)) + ".." + fmt.format(max(v)) + "]")
            ratio = "-"
            if pv and rv and statistics.median(rv) > 0:
                ratio = "{:.2f}".format(statistics.median(pv) /
                                        statistics.median(rv))
            print("| {} | {} | {} | {} | {} | {} | {}/{} |".format(
                bench, key, unit, cell(pv), cell(rv), ratio, len(pv),
                len(rv)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
