#!/usr/bin/python3
"""Draws docs/data_parallel/step_time.svg from the step times measured with train_mlp.

The figures below are medians (of three runs, each the median of 55 steps after 5
warm-up steps) of `train_mlp --hidden=512 --batch=256 --steps=60 --time`, rank 0's,
measured on 2026-11-22 at 23:42 UTC on the 2-core development machine with no other
jobs (load average 0.06 at the start): 2 ranks of 1 thread each against one process of
1 and of 2 threads. (The same runs with other builds keeping the load at 9-10 took
36-100 ms per step on 2 ranks: oversubscribed MPI ranks spin-wait against each other.)
No dependencies beyond the standard library.
"""
import os

RUNS = [  # (label, [median step ms of each run])
    ("1 process, 2 threads", [2.34, 4.19, 2.35]),
    ("1 process, 1 thread", [4.53, 4.26, 4.19]),
    ("2 ranks x 1 thread, bucketed", [2.77, 2.91, 2.85]),
    ("2 ranks x 1 thread, per gradient", [2.95, 3.05, 2.69]),
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
