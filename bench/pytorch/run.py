#!/usr/bin/python3
"""The PyTorch side of the benchmark suite (bench/PROTOCOL.md): one model, one process.

Run with Debian's Python (torch 1.13 + NumPy), from anywhere:

  run.py --model=M --preset=P --names=NAMES.json --init-out=INIT.safetensors [--seed=S]
      builds the seeded model and random data, maps every state_dict() key to its weft
      name (bench/pytorch/models.py), checks the names and shapes against the weft
      worker's --names-out JSON (exit 1 with the differences otherwise) and writes the
      weights under weft's names plus `input.0` (`input.1`, ...) and `target`.

  run.py --model=M --preset=P --init=INIT.safetensors [--epochs=E] [--warmup=W] [--threads=T]
      loads weights and data from INIT, trains (an epoch = 50 steps of forward, loss,
      zero_grad(set_to_none=True), backward, Adam step, loss.item()), and prints as its
      last line one JSON object: model, framework, config, epoch_ms, median_ms, first_loss,
      param_count, peak_rss_increase_bytes, threads, env, openblas_corename, ...

  run.py --model=M --preset=P [--epochs=E] [--warmup=W] [--threads=T]
      standalone: the same training on its own seeded init and data.

  run.py --print-params [--preset=P]
      prints every model's parameter count (both presets unless --preset is given).

  run.py --device=cuda --config=C ...  (with --init or standalone, as above)
      the same timed run on one NVIDIA GPU (`bench:suite --device=cuda`), in one of the
      GPU configurations of cuda_suite.py's make_step: eager, fused (Adam(fused=True)),
      compile (torch.compile, fused Adam) or cuda_graph (the whole step as one CUDA graph);
      fp32 with TF32 off, or with --precision=bf16 under torch.autocast("cuda",
      dtype=torch.bfloat16) (cuda_suite.py's autocast). Each step still ends with loss.item(). The JSON line adds
      "device": "cuda", "device_peak_bytes" (torch.cuda.max_memory_allocated() over the
      run, less what was allocated before the model was built) and "gpu" (its name); for
      cuda_graph, "first_loss" is the first warm-up step's, taken before the capture.

  run.py --device=cuda --check-device
      exits 0 (printing the GPU's name) when this torch has CUDA and sees a device, else 1
      with the reason: the suite asks before its first model.

--precision=bf16 (or f16) runs forward and loss under torch.autocast("cpu", dtype=...)
(PyTorch's mixed precision: parameters and Adam stay fp32; the JSON's "precision" says
which; layer_norm runs in fp32 as on CUDA, since torch 1.13's CPU autocast fails on it);
default f32, no autocast. f16 on the CPU needs a torch newer than 1.13, whose CPU
autocast takes bfloat16 only: run.py refuses it with that message. On the GPU
(--device=cuda) bf16 only: f16 would need loss scaling, which the four configurations
do not have, and run.py refuses it.
--steps=N changes the 50 steps per epoch, for quick checks only. Defaults: --preset=cpu; --warmup 3 and --epochs 20 (cpu preset: 1 and 5); --threads=1;
--seed=0. --threads=N sets torch.set_num_threads(N) and, unless already set in the
environment, OMP_NUM_THREADS and OPENBLAS_NUM_THREADS (torch.mm here calls OpenBLAS,
whose own pthread pool otherwise takes every core).
OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE are removed from the process's environment before
torch loads OpenBLAS (peer_env.py); the JSON line's "openblas_corename" names the kernel
OpenBLAS ran ("Cooperlake" on the machines of 2026-11-28; null without OpenBLAS), and
stderr says the same in words.
"""

import json
import os
import re
import statistics
import sys
import time


def parse_args(argv):
    args = {}
    for a in argv:
        if not a.startswith("--"):
            raise SystemExit(f"run.py: unexpected argument '{a}' (see --help)")
        if a in ("--help", "-h"):
            print(__doc__)
            raise SystemExit(0)
        key, eq, value = a[2:].partition("=")
        args[key.replace("-", "_")] = value if eq else True
    known = {"model", "preset", "names", "init_out", "init", "epochs", "warmup", "threads",
             "seed", "print_params", "steps", "precision", "device", "config", "check_device"}
    unknown = set(args) - known
    if unknown:
        raise SystemExit(f"run.py: unknown option(s) {', '.join('--' + u for u in sorted(unknown))}")
    return args


ARGS = parse_args(sys.argv[1:])
THREADS = int(ARGS.get("threads", 1))
# Before torch is imported: the thread pools read these at load time.
for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(var, str(THREADS))

sys.dont_write_bytecode = True  # no __pycache__ in the source tree or in bazel's runfiles
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer_env  # noqa: E402  (first: OpenBLAS reads its environment when torch loads it)
import torch  # noqa: E402

import init_file  # noqa: E402
import models  # noqa: E402
import safetensors_io  # noqa: E402

TUNED_ENV = ("OMP_WAIT_POLICY", "GLIBC_TUNABLES")


def proc_status_bytes(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                value, unit = line.split()[1:3]
                assert unit == "kB", line
                return int(value) * 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def resolve(path):
    """Paths relative to where the user ran the command (bazel run sets this)."""
    base = os.environ.get("BUILD_WORKING_DIRECTORY")
    return os.path.join(base, path) if base and not os.path.isabs(path) else path


def fail(message):
    print(f"run.py: {message}", file=sys.stderr)
    raise SystemExit(1)


# ---- The weft worker's --names-out JSON ---------------------------------------------------

DTYPE_ALIASES = {"F32": torch.float32, "F64": torch.float64, "F16": torch.float16,
                 "I64": torch.int64, "I32": torch.int32, "U8": torch.uint8, "BOOL": torch.bool,
                 "f32": torch.float32, "f64": torch.float64, "i64": torch.int64,
                 "i32": torch.int32, "bool": torch.bool}


def parse_type(t):
    """A type in the names JSON -> (shape or None, dtype or None). Accepts
    {"shape": [...], "dtype": "f32"} or a string like "f32[8,64]"."""
    if isinstance(t, dict):
        dtype = t.get("dtype")
        return (list(t["shape"]) if "shape" in t else None,
                DTYPE_ALIASES.get(dtype) if dtype is not None else None)
    if isinstance(t, str):
        m = re.fullmatch(r"\s*(\w+)\s*\[([\d,\s]*)\]\s*", t)
        if m:
            dims = [int(d) for d in m.group(2).replace(" ", "").split(",") if d]
            return dims, DTYPE_ALIASES.get(m.group(1))
    return None, None


def read_weft_names(path):
    """Reads weft_worker's --names-out JSON: {"model", "preset", "loss", "lr",
    "param_count", "params": [{"name", "shape", "dtype", "kind"}, ...], "inputs": [{"name",
    "shape", "dtype", "high"}], "target": {...}}. Returns ([(name, shape, dtype or None)],
    inputs [(shape, dtype)] or None, target (shape, dtype) or None, the whole object)."""
    with open(path) as f:
        data = json.load(f)
    params, io = [], {}
    if isinstance(data, dict):
        entries = None
        for key in ("params", "parameters", "names", "state"):
            if isinstance(data.get(key), list):
                entries = (entries or []) + data[key]
        if entries is None:
            fail(f"{path}: no list of parameters found (keys: {sorted(data)})")
        io = data
    else:
        entries = []
        for e in data:
            if isinstance(e, dict) and "name" in e:
                entries.append(e)
            elif isinstance(e, dict) and ("inputs" in e or "target" in e):
                io = e
    for e in entries:
        shape, dtype = parse_type(e)
        params.append((e["name"], shape, dtype))
    inputs = [parse_type(t) for t in io["inputs"]] if isinstance(io.get("inputs"), list) else None
    target = parse_type(io["target"]) if io.get("target") is not None else None
    return params, inputs, target, io


def check_names(spec, weft_params, weft_inputs, weft_target, path, extra=None):
    """Fails listing every difference between the mapped PyTorch state and weft's."""
    ours = {spec.mapping[k]: (list(v.shape), v.dtype, k)
            for k, v in spec.module.state_dict().items()}
    theirs = {}
    problems = []
    for name, shape, dtype in weft_params:
        if name in theirs:
            problems.append(f"  duplicate weft name {name}")
        theirs[name] = (shape, dtype)
    for name in sorted(set(theirs) - set(ours)):
        problems.append(f"  missing on the PyTorch side: {name} {theirs[name][0]}")
    for name in sorted(set(ours) - set(theirs)):
        problems.append(f"  extra on the PyTorch side: {name} {ours[name][0]} "
                        f"(PyTorch '{ours[name][2]}')")
    for name in sorted(set(ours) & set(theirs)):
        shape, dtype, key = ours[name]
        wshape, wdtype = theirs[name]
        if wshape is not None and wshape != shape:
            problems.append(f"  shape mismatch: {name}: weft {wshape}, PyTorch {shape} ('{key}')")
        if wdtype is not None and wdtype != dtype:
            problems.append(f"  dtype mismatch: {name}: weft {wdtype}, PyTorch {dtype} ('{key}')")
    if weft_inputs is not None:
        if len(weft_inputs) != len(spec.inputs):
            problems.append(f"  weft takes {len(weft_inputs)} inputs, PyTorch {len(spec.inputs)}")
        for i, ((wshape, wdtype), (shape, dtype, _)) in enumerate(zip(weft_inputs, spec.inputs)):
            if (wshape is not None and wshape != list(shape)) or (wdtype is not None and wdtype != dtype):
                problems.append(f"  input.{i}: weft {wshape} {wdtype}, PyTorch {list(shape)} {dtype}")
    if weft_target is not None:
        shape, dtype = ((spec.inputs[0][0], spec.inputs[0][1]) if spec.target == "input"
                        else spec.target[:2])
        wshape, wdtype = weft_target
        if (wshape is not None and wshape != list(shape)) or (wdtype is not None and wdtype != dtype):
            problems.append(f"  target: weft {wshape} {wdtype}, PyTorch {list(shape)} {dtype}")
    extra = extra or {}
    if "model" in extra and extra["model"] != spec.name:
        problems.append(f"  the names are for model {extra['model']}, not {spec.name}")
    if "loss" in extra and extra["loss"] != spec.loss:
        problems.append(f"  loss: weft {extra['loss']}, PyTorch {spec.loss}")
    if "lr" in extra and abs(float(extra["lr"]) - spec.lr) > 1e-12:
        problems.append(f"  lr: weft {extra['lr']}, PyTorch {spec.lr}")
    if "param_count" in extra and int(extra["param_count"]) != spec.param_count():
        problems.append(f"  parameter count: weft {extra['param_count']}, "
                        f"PyTorch {spec.param_count()}")
    for i, entry in enumerate(extra.get("inputs") or []):
        kind = spec.inputs[i][2] if i < len(spec.inputs) else None
        if isinstance(entry, dict) and entry.get("dtype") == "I64" and isinstance(kind, tuple):
            if int(entry.get("high", kind[1])) != kind[1]:
                problems.append(f"  input.{i}: tokens in [0, {entry['high']}) on weft, "
                                f"[0, {kind[1]}) on PyTorch")
    if problems:
        fail(f"{spec.name}: PyTorch's mapped state and weft's names ({path}) differ:\n" +
             "\n".join(problems))
    return len(ours)


# ---- Commands ---------------------------------------------------------------------------

def build_seeded(name, preset, seed):
    torch.manual_seed(seed)
    spec = models.build(name, preset)
    inputs, target = spec.make_data()
    return spec, inputs, target


def init_out(name, preset, seed):
    spec, inputs, target = build_seeded(name, preset, seed)
    if "names" in ARGS:
        params, weft_inputs, weft_target, extra = read_weft_names(resolve(ARGS["names"]))
        n = check_names(spec, params, weft_inputs, weft_target, ARGS["names"], extra)
        print(f"{name}: {n} names and shapes match weft's", file=sys.stderr)
    else:
        print(f"{name}: no --names given, names not checked against weft", file=sys.stderr)
    tensors = {spec.mapping[k]: v for k, v in spec.module.state_dict().items()}
    for i, x in enumerate(inputs):
        tensors[f"input.{i}"] = x
    tensors["target"] = target
    out = resolve(ARGS["init_out"])
    safetensors_io.save(out, tensors, {"format": "pt", "model": name, "preset": preset,
                                       "seed": str(seed), "source": "bench/pytorch/run.py"})
    print(f"wrote {out}: {len(tensors)} tensors", file=sys.stderr)


def load_init(spec, path):
    """Copies the weights under weft's names into the model; returns (inputs, target)."""
    try:
        return init_file.load_init(spec, path)
    except init_file.InitError as e:
        fail(str(e))


PRECISIONS = {"f32": None, "bf16": torch.bfloat16, "f16": torch.float16}


def autocast_dtype(dev):
    """The --precision's torch dtype for autocast, or None for f32 (no autocast); `dev` is
    cuda_device()'s (None: the CPU)."""
    precision = ARGS.get("precision", "f32")
    if precision not in PRECISIONS:
        fail(f"--precision must be one of {', '.join(PRECISIONS)}, got '{precision}'")
    dtype = PRECISIONS[precision]
    if dev is not None:  # CUDA's autocast runs layer_norm in fp32 itself
        return dtype
    if dtype is torch.float16:
        try:
            with torch.autocast("cpu", dtype=torch.float16):
                pass
        except RuntimeError as e:
            fail(f"--precision=f16: torch {torch.__version__}'s CPU autocast refuses float16 "
                 f"({str(e).splitlines()[0]})")
    if dtype is not None:
        fp32_layer_norm()
    return dtype


def fp32_layer_norm():
    """torch 1.13's CPU autocast leaves layer_norm off its lists, so a bf16 input meets the
    module's fp32 weight and layer_norm raises "expected scalar type BFloat16 but found
    Float". Its CUDA autocast runs layer_norm in fp32; do the same here (weft's policy too)."""
    original = torch.nn.functional.layer_norm

    def layer_norm(x, *args, **kwargs):
        with torch.autocast("cpu", enabled=False):
            return original(x.float(), *args, **kwargs)

    torch.nn.functional.layer_norm = layer_norm


def cuda_device():
    """--device: None for the CPU, or torch's CUDA device after checking that there is one
    (else exit 1 naming what is missing)."""
    device = ARGS.get("device", "cpu")
    if device not in ("cpu", "cuda"):
        fail(f"--device must be cpu or cuda, got '{device}'")
    if device == "cpu":
        if "config" in ARGS or "check_device" in ARGS:
            fail("--config and --check-device go with --device=cuda")
        return None
    if not torch.cuda.is_available():
        fail(f"--device=cuda: no CUDA device for torch {torch.__version__} (built with CUDA "
             f"{torch.version.cuda}; torch.cuda.is_available() is False)")
    torch.backends.cuda.matmul.allow_tf32 = False  # weft's cuBLAS and cuDNN math is fp32
    torch.backends.cudnn.allow_tf32 = False
    return torch.device("cuda")


def cuda_config():
    """--config on the GPU: one of cuda_suite.CONFIGS, checked with --precision against
    cuda_suite.PRECISIONS."""
    import cuda_suite  # the GPU configurations' one definition
    config = ARGS.get("config")
    if config not in cuda_suite.CONFIGS:
        fail(f"--device=cuda needs --config=one of {', '.join(cuda_suite.CONFIGS)}, got '{config}'")
    precision = ARGS.get("precision", "f32")
    if precision not in cuda_suite.PRECISIONS:
        fail(f"--device=cuda --precision={precision}: the GPU configurations run "
             f"{' or '.join(cuda_suite.PRECISIONS)} (f16 would need loss scaling)")
    return config, cuda_suite.make_step


def train(name, preset, seed):
    cpu = preset == "cpu"
    if ARGS.get("device") == "cuda":  # the arguments first: checked on any machine
        config, make_step = cuda_config()
    dev = cuda_device()
    low = autocast_dtype(dev)
    epochs = int(ARGS.get("epochs", 5 if cpu else 20))
    warmup = int(ARGS.get("warmup", 1 if cpu else 3))
    steps = int(ARGS.get("steps", models.STEPS_PER_EPOCH))  # fewer only for quick checks
    torch.set_num_threads(THREADS)
    print(peer_env.describe(), file=sys.stderr, flush=True)

    rss_before = proc_status_bytes("VmRSS")
    device_before = torch.cuda.memory_allocated() if dev is not None else 0
    if "init" in ARGS:
        torch.manual_seed(seed)
        spec = models.build(name, preset)
        inputs, target = load_init(spec, resolve(ARGS["init"]))
    else:
        spec, inputs, target = build_seeded(name, preset, seed)
    model = spec.module
    model.train()
    if dev is not None:
        inputs = [x.to(dev) for x in inputs]
        target = inputs[0] if spec.target == "input" else target.to(dev)
        gpu_step, first_loss = make_step(model, spec.loss_fn, inputs, target, spec.lr, config, dev,
                                         low)
    else:
        opt = torch.optim.Adam(model.parameters(), lr=spec.lr)
        first_loss = None

    epoch_ms, loss_value = [], None
    for epoch in range(warmup + epochs):
        start = time.perf_counter()
        for _ in range(steps):
            if dev is not None:
                loss = gpu_step()
            elif low is None:
                loss = spec.loss_fn(model(*inputs), target)
            else:
                with torch.autocast("cpu", dtype=low):
                    loss = spec.loss_fn(model(*inputs), target)
            if dev is None:
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
            loss_value = loss.item()
            if first_loss is None:
                first_loss = loss_value
        ms = (time.perf_counter() - start) * 1e3
        if epoch >= warmup:
            epoch_ms.append(ms)
    peak = proc_status_bytes("VmHWM") - rss_before

    env = {v: os.environ.get(v)
           for v in TUNED_ENV + ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS") + peer_env.HANDICAP}
    tuned = all(os.environ.get(v) for v in TUNED_ENV)
    autocast = "" if low is None else f", autocast {ARGS['precision']}"
    cpu_config = f"{THREADS} thread{'s' if THREADS != 1 else ''}, {'tuned' if tuned else 'default'}" + autocast
    result = {
        "model": name, "framework": "pytorch",
        "config": cpu_config if dev is None else f"cuda, {config}{autocast}",
        "device": "cpu" if dev is None else "cuda",
        "precision": ARGS.get("precision", "f32"),
        "epoch_ms": [round(ms, 3) for ms in epoch_ms],
        "median_ms": round(statistics.median(epoch_ms), 3) if epoch_ms else None,
        "first_loss": first_loss, "last_loss": loss_value,
        "param_count": spec.param_count(),
        "peak_rss_increase_bytes": peak,
        "threads": THREADS, "env": env, "tuned": tuned,
        "preset": preset, "warmup": warmup, "epochs": epochs,
        "steps_per_epoch": steps, "init": ARGS.get("init"),
        "torch": torch.__version__,
        "openblas_corename": peer_env.openblas_corename(),
    }
    if dev is not None:
        result["device_peak_bytes"] = torch.cuda.max_memory_allocated() - device_before
        result["gpu"] = torch.cuda.get_device_name()
    print(json.dumps(result))


def print_params(presets):
    for preset in presets:
        for name in models.MODEL_NAMES:
            spec = models.build(name, preset)
            print(f"{preset:6} {name:17} {spec.param_count():>12,d} parameters, "
                  f"{len(spec.mapping)} state tensors")


def main():
    if ARGS.get("print_params"):
        print_params([ARGS["preset"]] if "preset" in ARGS else models.PRESETS)
        return
    if ARGS.get("check_device"):
        if cuda_device() is None:
            fail("--check-device goes with --device=cuda")
        print(f"cuda: {torch.cuda.get_device_name()}, torch {torch.__version__}")
        return
    if "model" not in ARGS:
        fail("--model=M is required (one of " + ", ".join(models.MODEL_NAMES) + ")")
    name, preset = ARGS["model"], ARGS.get("preset", "cpu")
    if name not in models.MODEL_NAMES:
        fail(f"unknown model '{name}' (one of {', '.join(models.MODEL_NAMES)})")
    if preset not in models.PRESETS:
        fail(f"unknown preset '{preset}' (one of {', '.join(models.PRESETS)})")
    seed = int(ARGS.get("seed", 0))
    if "init_out" in ARGS:
        if "init" in ARGS:
            fail("--init-out and --init are separate steps")
        init_out(name, preset, seed)
    else:
        train(name, preset, seed)


if __name__ == "__main__":
    main()
