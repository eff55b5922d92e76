"""The PyTorch side of the suite on a GPU ([GPU]): the ten models of bench/pytorch/models.py
at a preset, each in PyTorch's GPU configurations, the best reported per model.

  eager        default Adam
  fused        Adam(fused=True)
  compile      torch.compile(model) (default mode) with fused Adam (slow to compile: only
               for the models in --compile, default transformer and mlp, where it has a
               chance; ENVIRONMENT.md: it helps only the transformer)
  cuda_graph   the whole step (forward, loss, backward, capturable fused Adam) captured
               once as one CUDA graph and replayed

fp32 with TF32 off (weft's cuBLAS and cuDNN math is pedantic fp32), or with --precision=bf16
each configuration's forward and loss under torch.autocast("cuda", dtype=torch.bfloat16)
(parameters, gradients and Adam stay fp32, as weft's bf16 libraries keep f32 master
weights); cuda_graph captures it with autocast's cast cache off (cache_enabled=False, the
constraint torch.cuda.make_graphed_callables states for autocast in a captured region: the
cache's casts would be freed when the region exits and replayed from freed memory). Each
configuration
times --steps steps after --warmup (median ms per step, each step ending with
torch.cuda.synchronize(), as tests/cuda/step_bench times weft's) and records
torch.cuda.max_memory_allocated() over its steps. The last line per model is a JSON object.

    python3 bench/pytorch/cuda_suite.py [--preset=paper] [--steps=100] [--warmup=10]
        [--models=a,b] [--configs=eager,fused,compile,cuda_graph] [--compile=transformer,mlp]
        [--init=DIR] [--precision=f32|bf16]

--init=DIR: each model starts from DIR/MODEL.safetensors (an INIT file, run.py --init-out),
as weft's side does with the same folder (tests/cuda step_bench --init=DIR).

make_step() is where the four configurations are defined: this script, cuda_mlp.py and
run.py --device=cuda --config=NAME (the suite's GPU side, `bench:suite --device=cuda`) all
build their steps with it.
"""
import argparse
import gc
import json
import os
import statistics
import sys
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer_env  # noqa: E402  (first: OpenBLAS reads its environment when torch loads it)
import torch  # noqa: E402

import init_file  # noqa: E402
import models  # noqa: E402


CONFIGS = ("eager", "fused", "compile", "cuda_graph")

# --precision: the autocast dtype of each configuration's forward and loss (None: fp32, no
# autocast). f16 would need loss scaling (GradScaler), which the four steps do not have.
PRECISIONS = {"f32": None, "bf16": torch.bfloat16}


def autocast(dev, dtype, config):
    """The context each step's forward and loss run in: autocast to `dtype` on `dev`'s device
    type (disabled when `dtype` is None), its cast cache off for cuda_graph (captured)."""
    return torch.autocast(dev.type, dtype=dtype, enabled=dtype is not None,
                          cache_enabled=config != "cuda_graph")


def make_step(model, loss_fn, inputs, target, lr, config, dev, dtype=None):
    """`model` (moved to `dev`) trained in configuration `config` of CONFIGS: (step, first)
    where step() runs one training step (forward and loss under autocast(dev, dtype, config),
    backward, Adam) and returns the loss as a device tensor. cuda_graph runs three warm-up steps here before capturing the step;
    `first` is then the loss of the first of them, the first step from the initial weights;
    otherwise it is None and the first step() call's loss is the first loss."""
    model = model.to(dev)
    model.train()
    if config == "eager":
        opt = torch.optim.Adam(model.parameters(), lr=lr)
    elif config in ("fused", "compile"):
        opt = torch.optim.Adam(model.parameters(), lr=lr, fused=True)
    else:
        opt = torch.optim.Adam(model.parameters(), lr=torch.tensor(lr, device=dev), fused=True,
                               capturable=True)
    fwd = torch.compile(model) if config == "compile" else model
    out = {}

    def step():
        opt.zero_grad(set_to_none=(config != "cuda_graph"))
        with autocast(dev, dtype, config):
            loss = loss_fn(fwd(*inputs), target)
        loss.backward()
        opt.step()
        out["loss"] = loss
        return loss

    if config != "cuda_graph":
        return step, None
    # Warm up on a side stream (allocates gradients and optimizer state), then capture.
    first = None
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            loss = step()
            if first is None:
                first = loss.item()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    opt.zero_grad(set_to_none=False)
    with torch.cuda.graph(graph):
        step()

    def replay():
        graph.replay()
        return out["loss"]

    return replay, first


def time_config(model, loss_fn, inputs, target, lr, config, steps, warmup, dev, dtype=None):
    """One configuration's training step on the GPU: (median ms, min ms, first loss, peak
    bytes). cuda_mlp.py times its MLP with it too."""
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    run, first = make_step(model, loss_fn, inputs, target, lr, config, dev, dtype)
    ms = []
    for s in range(warmup + steps):
        t0 = time.perf_counter()
        loss = run()
        torch.cuda.synchronize()
        if s >= warmup:
            ms.append((time.perf_counter() - t0) * 1e3)
        if first is None:
            first = loss.item()
    return statistics.median(ms), min(ms), first, torch.cuda.max_memory_allocated()


def run_config(name, preset, config, steps, warmup, dev, init=None, dtype=None):
    # What earlier configurations leave allocated is not this one's: garbage in reference
    # cycles (collected here) and cuBLAS's workspaces for the side streams of earlier
    # CUDA-graph captures (about 65 MiB per model on an H100, never freed: measured
    # 2026-11-26). The peak reported is the configuration's own, above what was left.
    gc.collect()
    torch.cuda.empty_cache()
    left = torch.cuda.memory_allocated()
    torch.manual_seed(0)
    spec = models.build(name, preset)
    if init:  # the same values as weft's side: INIT.safetensors (bench/PROTOCOL.md)
        inputs, target = init_file.load_init(spec, init)
    else:
        inputs, target = spec.make_data()
    inputs = [x.to(dev) for x in inputs]
    target = inputs[0] if spec.target == "input" else target.to(dev)
    med, low, first, peak = time_config(spec.module, spec.loss_fn, inputs, target, spec.lr, config,
                                        steps, warmup, dev, dtype)
    return med, low, first, peak - left


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--preset", default="paper")
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--models", default=",".join(models.MODEL_NAMES))
    p.add_argument("--configs", default="eager,fused,compile,cuda_graph")
    p.add_argument("--compile", default="transformer,mlp")
    p.add_argument("--init", default="",
                   help="a folder of MODEL.safetensors INIT files (run.py --init-out): each "
                        "model starts from its file's weights and data, as weft's side does "
                        "(tests/cuda step_bench --init), so the first-step losses compare")
    p.add_argument("--precision", default="f32", choices=sorted(PRECISIONS),
                   help="bf16: forward and loss under torch.autocast(\"cuda\", torch.bfloat16)")
    a = p.parse_args()
    print(peer_env.describe(), file=sys.stderr, flush=True)
    if not torch.cuda.is_available():
        print("cuda_suite: no GPU")
        return
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda")
    compile_ok = set(a.compile.split(",")) if a.compile else set()
    for name in a.models.split(","):
        results = {}
        for config in a.configs.split(","):
            if config == "compile" and name not in compile_ok:
                continue
            try:
                init = os.path.join(a.init, name + ".safetensors") if a.init else None
                med, low, first, peak = run_config(name, a.preset, config, a.steps, a.warmup, dev,
                                                   init, PRECISIONS[a.precision])
            except Exception as e:  # a configuration PyTorch cannot run this model in
                print(f"pytorch {name:17} {config:10} failed: {type(e).__name__}: {e}"[:300],
                      flush=True)
                continue
            results[config] = {"median_ms": round(med, 4), "min_ms": round(low, 4),
                               "first_loss": first, "peak_bytes": peak}
            print(f"pytorch {name:17} {config:10} median {med:8.3f} ms/step (min {low:.3f}), "
                  f"first loss {first:.5f}, peak {peak / 2**20:8.1f} MiB", flush=True)
        best = min(results, key=lambda c: results[c]["median_ms"]) if results else None
        print(json.dumps({"model": name, "preset": a.preset, "precision": a.precision,
                          "torch": torch.__version__,
                          "best": best, "configs": results}), flush=True)


if __name__ == "__main__":
    main()
