"""The suite on a GPU, first-step losses side by side ([GPU]): weft's from step_bench's
lines ("weft cuda  MODEL  one CUDA graph ... loss FIRST -> LAST"), PyTorch's from
cuda_suite.py's JSON lines (each configuration's first_loss, cuda_graph's included: its
first warm-up step's, from the initial weights, as cuda_suite.py's make_step records it),
both started from the same INIT files (--init). Agreement is the CPU suite's:
|weft - pytorch| <= 1e-4 (1 + |pytorch|) (bench/PROTOCOL.md). Exits 1 when a model
disagrees.

    python3 tests/cuda/first_losses.py SUITE_WEFT.txt SUITE_PYTORCH.txt
"""
import json
import re
import sys


def main():
    weft, pytorch = {}, {}
    with open(sys.argv[1]) as f:
        for line in f:
            m = re.match(r"weft cuda\s+(\S+)\s+one CUDA graph .*loss (\S+) ->", line)
            if m:
                weft[m.group(1)] = float(m.group(2))
    with open(sys.argv[2]) as f:
        for line in f:
            if line.startswith("{"):
                j = json.loads(line)
                losses = {c: r["first_loss"] for c, r in j["configs"].items()}
                pytorch[j["model"]] = losses
    bad = 0
    for model, w in weft.items():
        for config, p in sorted(pytorch.get(model, {}).items()):
            ok = abs(w - p) <= 1e-4 * (1 + abs(p))
            bad += not ok
            print(f"{model:17} {config:8} weft {w:.6f}  pytorch {p:.6f}  "
                  f"{'agree' if ok else 'DIFFER'} ({abs(w - p) / (1 + abs(p)):.1e})")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
