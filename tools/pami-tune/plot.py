#!/usr/bin/env python3
"""pami-tune --plot: per collective, shape, type and op of a profile, the
median time of every algorithm against the size (log-log), with the best
one at each size (the envelope AUTO takes from this profile) marked.
One PNG per group in DIR, and DIR/index.txt listing them."""
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: plot.py PROFILE.json DIR")
    with open(sys.argv[1]) as f:
        prof = json.load(f)
    out = sys.argv[2]
    os.makedirs(out, exist_ok=True)
    groups = {}
    for e in prof.get("entries", []):
        if "metrics" not in e:
            continue
        s = e["shape"]
        key = (e["collective"], s["size"], s["nodes"], s["tasks_per_node"],
               s.get("layout", "contiguous"), e.get("type", "byte"),
               e.get("op", "none"))
        groups.setdefault(key, []).append(e)
    names = []
    for key in sorted(groups):
        coll, size, nodes, ppn, layout, typ, op = key
        series = {}
        for e in groups[key]:
            series.setdefault(e["algorithm"], []).append(
                (max(e["bytes"], 1), e["metrics"]["median_us"]))
        best = {}
        for algo, pts in series.items():
            for b, us in pts:
                if b not in best or us < best[b][1]:
                    best[b] = (algo, us)
        fig, ax = plt.subplots(figsize=(8, 5))
        for algo in sorted(series):
            pts = sorted(series[algo])
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker=".",
                    linewidth=1, label=algo)
        env = sorted(best.items())
        ax.plot([b for b, _ in env], [v[1] for _, v in env], color="black",
                linewidth=3, alpha=0.25, label="best (chosen)")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("bytes per rank")
        ax.set_ylabel("median time per call (us)")
        what = coll if op == "none" else f"{coll} {typ} {op}"
        ax.set_title(f"{what}: {size} tasks ({nodes} node(s) x {ppn}, "
                     f"{layout})")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize="small")
        name = f"{coll}_{size}x{ppn}_{layout}_{typ}_{op}.png"
        fig.tight_layout()
        fig.savefig(os.path.join(out, name), dpi=90)
        plt.close(fig)
        names.append(name)
    with open(os.path.join(out, "index.txt"), "w") as f:
        f.write("\n".join(names) + "\n")
    print(f"pami-tune: {len(names)} plots in {out}")


if __name__ == "__main__":
    main()
