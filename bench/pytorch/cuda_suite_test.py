#!/usr/bin/python3
"""The PyTorch side of the GPU suite in bf16 (#30), checked on a machine without a GPU:
run.py's --device=cuda arguments (refused or accepted before the device is looked for),
and cuda_suite.py's autocast (its cast cache off for the captured cuda_graph step) inside
make_step, whose eager configuration runs on the CPU too.

    bazel test //bench:pytorch_cuda_args_test
    /usr/bin/python3 bench/pytorch/cuda_suite_test.py
"""
import copy
import os
import subprocess
import sys
import unittest

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.realpath(__file__))  # bazel runs a link to this file
sys.path.insert(0, HERE)
import peer_env  # noqa: E402,F401  (first: OpenBLAS reads its environment when torch loads it)
try:
    import torch  # noqa: E402
except ImportError:
    # The peer is optional: tools/setup --peer installs python3-torch; tools/test (and so a
    # fresh CI machine) does not. Nothing here can be checked without it.
    print("pytorch_cuda_args_test: skipped, no PyTorch for /usr/bin/python3 "
          "(tools/setup --peer installs python3-torch)")
    sys.exit(0)

import cuda_suite  # noqa: E402
import models  # noqa: E402


def run_py(*args):
    """run.py with `args`: (exit status, stderr's last line)."""
    p = subprocess.run([sys.executable, os.path.join(HERE, "run.py"), *args],
                       capture_output=True, text=True, timeout=300)
    lines = p.stderr.strip().splitlines()
    return p.returncode, lines[-1] if lines else ""


class RunPyArguments(unittest.TestCase):
    GPU = ("--model=mlp", "--preset=cpu", "--device=cuda")

    def test_f16_on_the_gpu_is_refused_naming_what_runs(self):
        self.assertEqual(run_py(*self.GPU, "--config=eager", "--precision=f16"),
                         (1, "run.py: --device=cuda --precision=f16: the GPU configurations run "
                             "f32 or bf16 (f16 would need loss scaling)"))

    def test_an_unknown_config_is_refused(self):
        self.assertEqual(run_py(*self.GPU, "--config=jit", "--precision=bf16"),
                         (1, "run.py: --device=cuda needs --config=one of eager, fused, compile, "
                             "cuda_graph, got 'jit'"))

    def test_bf16_on_the_gpu_is_accepted(self):
        # Past the argument checks, to the device (none here; a GPU machine trains).
        if torch.cuda.is_available():
            self.skipTest("a GPU here: run.py would train")
        rc, last = run_py(*self.GPU, "--config=cuda_graph", "--precision=bf16")
        self.assertEqual(rc, 1)
        self.assertTrue(last.startswith("run.py: --device=cuda: no CUDA device for torch"), last)


class Autocast(unittest.TestCase):
    CPU = torch.device("cpu")

    def test_each_config_autocasts_and_the_captured_one_has_no_cache(self):
        for config in cuda_suite.CONFIGS:
            with cuda_suite.autocast(self.CPU, torch.bfloat16, config):
                self.assertTrue(torch.is_autocast_cpu_enabled(), config)
                self.assertEqual(torch.get_autocast_cpu_dtype(), torch.bfloat16, config)
                self.assertEqual(torch.is_autocast_cache_enabled(), config != "cuda_graph", config)
        with cuda_suite.autocast(self.CPU, None, "eager"):
            self.assertFalse(torch.is_autocast_cpu_enabled())

    def test_precisions(self):
        self.assertEqual(cuda_suite.PRECISIONS, {"f32": None, "bf16": torch.bfloat16})

    def test_make_step_trains_under_autocast(self):
        # convnet at the cpu preset (no LayerNorm: torch 1.13's CPU autocast fails on it),
        # eager (plain Adam: runs on the CPU), f32 and bf16 from the same weights: bf16's
        # first loss is near f32's but not equal (its convolutions in bf16), and the
        # parameters and their Adam updates stay fp32.
        torch.manual_seed(0)
        spec = models.build("convnet", "cpu")
        inputs, target = spec.make_data()
        losses = {}
        for dtype in (None, torch.bfloat16):
            model = copy.deepcopy(spec.module)
            step, first = cuda_suite.make_step(model, spec.loss_fn, inputs, target, spec.lr,
                                               "eager", self.CPU, dtype)
            self.assertIsNone(first)
            loss = step()
            self.assertEqual(loss.dtype, torch.float32)
            losses[dtype] = loss.item()
            self.assertTrue(all(p.dtype == torch.float32 for p in model.parameters()))
        f32, bf16 = losses[None], losses[torch.bfloat16]
        self.assertNotEqual(f32, bf16)
        self.assertLess(abs(f32 - bf16), 1e-2 * (1 + abs(f32)), (f32, bf16))


if __name__ == "__main__":
    unittest.main()
