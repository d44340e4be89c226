#!/usr/bin/env python3
"""pami-tune --plot: per collective, shape, type and op of a profile, the
median time of every algorithm against the size (log-log), with the
algorithm AUTO takes from this profile at each size marked (the fastest;
with several rounds, the smallest worst ratio to a round's fastest, its
times in every round, docs/tuning.md). A profile of several rounds draws
each round's lines in its own style (r0 solid, r1 dashed, ...).
One PNG per group in DIR, and DIR/index.txt listing them."""
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def choices(series):
    """{bytes: algorithm} as coll_table.c chooses (without its stickiness):
    the fewest-missing, smallest worst ratio to a round's fastest."""
    best, cell = {}, {}
    for (algo, rnd), pts in series.items():
        for b, us in pts:
            cell.setdefault(b, {})[(algo, rnd)] = us
            best[(b, rnd)] = min(best.get((b, rnd), us), us)
    out = {}
    for b, c in cell.items():
        score = {}
        for (algo, rnd), us in c.items():
            ratio = us / best[(b, rnd)] if best[(b, rnd)] > 0 else 1.0
            cover, worst = score.get(algo, (0, 0.0))
            score[algo] = (cover + 1, max(worst, ratio))
        out[b] = min(score, key=lambda a: (-score[a][0], score[a][1], a))
    return out


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
            series.setdefault((e["algorithm"], e.get("round", 0)), []).append(
                (max(e["bytes"], 1), e["metrics"]["median_us"]))
        rounds = sorted({r for _, r in series})
        fig, ax = plt.subplots(figsize=(8, 5))
        styles = ["-", "--", ":", "-."]
        for algo, rnd in sorted(series):
            pts = sorted(series[(algo, rnd)])
            label = algo if len(rounds) == 1 else f"{algo} r{rnd}"
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker=".",
                    linewidth=1, label=label,
                    linestyle=styles[rnd % len(styles)])
        chosen = choices(series)
        for rnd in rounds:
            env = sorted((b, us) for b, us in
                         ((b, dict(series.get((a, rnd), [])).get(b))
                          for b, a in chosen.items()) if us is not None)
            ax.plot([b for b, _ in env], [us for _, us in env],
                    color="black", linewidth=3, alpha=0.25,
                    linestyle=styles[rnd % len(styles)],
                    label="chosen" if rnd == rounds[0] else None)
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
