#!/usr/bin/python3
"""Draws docs/data_parallel/step_time.svg from the step times measured with train_mlp.

The figures below are medians (of three runs, each the median of 55 steps after 5
warm-up steps) of `train_mlp --hidden=512 --batch=256 --steps=60 --time`, measured on
2026-11-22 on the 2-core development machine while other jobs kept its load average
at 9-10: they show the cost structure (MPI ranks spin-waiting against each other on
oversubscribed cores, one call per gradient against one bucket), not what 2 ranks
gain on idle cores. No dependencies beyond the standard library.
"""
import os

RUNS = [  # (label, [median step ms of each run])
    ("1 process, 2 threads", [17.4, 24.6, 23.9]),
    ("1 process, 1 thread", [10.6, 16.6, 16.4]),
    ("2 ranks x 1 thread, bucketed", [36.9, 48.0, 50.4]),
    ("2 ranks x 1 thread, per gradient", [59.6, 85.1, 100.5]),
    ("2 ranks, bucketed, yield_when_idle", [32.2, 35.5, 41.7]),
    ("2 ranks, per gradient, yield_when_idle", [51.4, 48.9, 46.2]),
]


def median(xs):
    s = sorted(xs)
    return s[len(s) // 2]


def main():
    width, bar_h, gap, left, top = 760, 26, 12, 300, 50
    height = top + len(RUNS) * (bar_h + gap) + 50
    scale = (width - left - 80) / max(max(r) for _, r in RUNS)
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
           'font-family="sans-serif" font-size="13">' % (width, height),
           '<rect width="100%" height="100%" fill="white"/>',
           '<text x="10" y="22" font-size="15">MLP 16-512-512-4, Adam, global batch 256: '
           'median step time (ms)</text>',
           '<text x="10" y="40" fill="#555">2 shared cores, load average 9-10 during the '
           'runs; dots: the three runs</text>']
    for i, (label, runs) in enumerate(RUNS):
        y = top + i * (bar_h + gap)
        m = median(runs)
        color = "#4878a8" if label.startswith("1 process") else "#d08a3c"
        out.append('<text x="%d" y="%d" text-anchor="end">%s</text>' %
                   (left - 8, y + bar_h * 0.68, label))
        out.append('<rect x="%d" y="%d" width="%.1f" height="%d" fill="%s"/>' %
                   (left, y, m * scale, bar_h, color))
        for r in runs:
            out.append('<circle cx="%.1f" cy="%.1f" r="3" fill="black"/>' %
                       (left + r * scale, y + bar_h / 2))
        out.append('<text x="%.1f" y="%d">%.1f</text>' %
                   (left + max(runs) * scale + 8, y + bar_h * 0.68, m))
    out.append('</svg>')
    here = os.path.dirname(os.path.abspath(__file__))
    path = os.path.join(here, "..", "..", "docs", "data_parallel", "step_time.svg")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")
    print("wrote", os.path.normpath(path))


if __name__ == "__main__":
    main()
