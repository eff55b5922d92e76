#!/usr/bin/env bash
# [Distributed] (#32) NCCL on a GPU in one short lease (about two minutes): what was
# written and tested on the host without a device (runtime/cuda/README.md, "NCCL").
#  1. nccl_step_test: the MLP step with its gradients' all_reduce ops
#     (mlp784_adam_all_reduce_step) through NCCL with one rank — buckets staged, reduced
#     by ncclAllReduce on the communication stream, joined back, inside the step's one
#     CUDA graph — bitwise equal to the same step without NCCL after 10 steps, with the
#     default buckets and with 4 KiB ones, and launch by launch; a local rank without its
#     GPU refused. Gradient accumulation (mlp784_adam_accumulate2_all_reduce_step, 2
#     micro-batches): the two captured graphs over one arena, the host replaying the
#     accumulating one (the gradients' buckets not reduced) on a window's first
#     micro-batch and the reducing one on its last — bitwise equal to the single-GPU step
#     with accumulation after 6 micro-batches, and launch by launch
#     (NcclStep.AccumulationOnOneRankEqualsTheSingleGpuStepBitwise). Run twice: plainly,
#     and with the torchrun variables of a world of one (LOCAL_RANK=0 WORLD_SIZE=1 RANK=0).
#  2. cases_test's all_reduce case against the reference interpreter (graph and
#     launches), then executor_test (the executor's schedule walk, profile_step).
#  3. nccl_bandwidth: ncclAllReduce (f32 sum, in place) for 1 to 256 MiB buffers: time,
#     algbw and NCCL-tests' busbw = algbw · 2(n-1)/n, which is 0 for one rank (one GPU
#     is lent: NCCL refuses two ranks on one device), so algbw is the figure to record.
#  4. The wired path (--data-parallel on cuda): the AOT driver train_mlp_cuda_dp (built
#     with data_parallel = True: NCCL over the launch's Gloo or MPI world) for 30 steps
#     under the torchrun variables of a world of one, and under `mpirun -np 1` where the
#     machine has mpirun, against the same binary without --data-parallel (one process,
#     its all_reduce ops as copies): every 10th step's loss side by side and the largest
#     difference (expected 0: ncclAvg over one rank is exact). The torchrun run also has
#     --collective-timeout=5, which must NOT fire (the NCCL watchdog is armed around each
#     step; a step takes milliseconds).
# Build and copy here (about 45 MB; NCCL is the machine's own, 2.28.3 in
# /usr/lib/x86_64-linux-gnu on the H200 machines; train_mlp_cuda_dp links Open MPI and
# Gloo, carried in .gpu/lib with what they load but the base system's libraries; a
# 4096-example Fashion-MNIST, 2 MB):
#
#   bazel build //tests/cuda:nccl_step_test //tests/cuda:nccl_bandwidth //tests/cuda:cases_test \
#       //runtime/cuda:executor_test //examples/fashion_mnist:train_mlp_cuda_dp
#   mkdir -p .gpu/lib && cp -f bazel-bin/tests/cuda/{nccl_step_test,nccl_bandwidth,cases_test} \
#       bazel-bin/runtime/cuda/executor_test bazel-bin/examples/fashion_mnist/train_mlp_cuda_dp .gpu/
#   ldd bazel-bin/examples/fashion_mnist/train_mlp_cuda_dp | awk '/=> \//{print $3}' | \
#       grep -vE '/(libc|libm|libdl|librt|libpthread|libgcc_s|libstdc\+\+|libssl|libcrypto|libz|libudev|libcud[a-z]*|libnccl|libcublas[A-Za-z]*)\.so' | \
#       xargs -I{} cp -fL {} .gpu/lib/
#   python3 tests/cuda/nccl_check_data.py /usr/share/datasets/fashion-mnist .gpu/fashion-mnist-small
#   # device tool: run(command="tests/cuda/nccl_check.sh", carry=[".gpu"], timeout_s=300)
#
# Logs go to $OUT (else /tmp/weft-gpu). open_issues_check.sh first runs steps 1, 2's
# all_reduce cases and 4 (the default paths), third step 3. Estimated (on an H200; no run
# yet): default 20-55 s (nccl_step_test twice, 5-15 s each; 4 tests; two or three 30-step
# runs of train_mlp_cuda_dp, 3-8 s each with NCCL's start); nccl_bandwidth 10-20 s.
set -uo pipefail
# shellcheck source=tests/cuda/lease_common.sh
source "$(dirname "$0")/lease_common.sh"

nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
ls -l /usr/lib/x86_64-linux-gnu/libnccl.so* 2>/dev/null | head -2
if part default; then
timeout 90 .gpu/nccl_step_test --gtest_brief=0 >"$out/nccl_step.txt" 2>&1
echo "== nccl_step_test rc=$? $(line '^\[  (PASSED|FAILED|SKIPPED)' "$out/nccl_step.txt")"
grep -E "Failure|error|Which is|stage into bucket 0|^bucket|NCCL|accumulat" "$out/nccl_step.txt" | head -30 | cut -c1-200
LOCAL_RANK=0 WORLD_SIZE=1 RANK=0 timeout 90 .gpu/nccl_step_test --gtest_brief=1 >"$out/nccl_step_torchrun.txt" 2>&1
echo "== nccl_step_test (LOCAL_RANK=0 WORLD_SIZE=1) rc=$? $(line '^\[  (PASSED|FAILED)' "$out/nccl_step_torchrun.txt")"

timeout 90 .gpu/cases_test --gtest_brief=1 --gtest_filter='*all_reduce*' >"$out/cases_all_reduce.txt" 2>&1
echo "== cases_test (all_reduce) rc=$? $(line '^\[  (PASSED|FAILED)' "$out/cases_all_reduce.txt")"
grep -E "Failure|error" -A4 "$out/cases_all_reduce.txt" | head -12
fi
if whole; then
  timeout 60 .gpu/executor_test --gtest_brief=1 >"$out/executor.txt" 2>&1
  echo "== executor_test rc=$? $(line '^\[  (PASSED|FAILED)' "$out/executor.txt")"
fi
if part rest; then
  timeout 60 .gpu/nccl_bandwidth --iters=20 >"$out/nccl_bandwidth.txt" 2>&1
  echo "== nccl_bandwidth rc=$?"
  cut -c1-200 "$out/nccl_bandwidth.txt"
fi
part default || exit 0

# 4. The wired path: --data-parallel on cuda, a world of one, against one process.
export LD_LIBRARY_PATH="$PWD/.gpu/lib:${LD_LIBRARY_PATH:-}"
steps="--data=.gpu/fashion-mnist-small --epochs=1 --max-steps=30 --log-every=10"
rm -f "$out"/dp_*.csv
timeout 90 .gpu/train_mlp_cuda_dp $steps --metrics-csv="$out/dp_none.csv" >"$out/dp_none.txt" 2>&1
echo "== train_mlp_cuda_dp (one process) rc=$? $(tail -1 "$out/dp_none.txt" | cut -c1-160)"
grep -E "error" "$out/dp_none.txt" | head -4 | cut -c1-200
LOCAL_RANK=0 RANK=0 WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29517 timeout 90 .gpu/train_mlp_cuda_dp \
    $steps --data-parallel --collective-timeout=5 --metrics-csv="$out/dp_torchrun.csv" >"$out/dp_torchrun.txt" 2>&1
echo "== train_mlp_cuda_dp --data-parallel (torchrun world of one, timeout 5 s) rc=$? $(tail -1 "$out/dp_torchrun.txt" | cut -c1-120)"
grep -E "error|NCCL|rank" "$out/dp_torchrun.txt" | head -6 | cut -c1-200
if command -v mpirun >/dev/null; then
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader timeout 90 \
      mpirun -np 1 -x LD_LIBRARY_PATH .gpu/train_mlp_cuda_dp $steps --data-parallel \
      --metrics-csv="$out/dp_mpirun.csv" >"$out/dp_mpirun.txt" 2>&1
  echo "== train_mlp_cuda_dp --data-parallel (mpirun -np 1) rc=$?"
  grep -E "error|NCCL" "$out/dp_mpirun.txt" | head -6 | cut -c1-200
else
  echo "== mpirun: not on this machine (the torchrun run above is the check)"
fi
# The loss column (3rd: epoch,step,loss,...) of each run, side by side, and the largest
# difference from the one-process run.
for run in torchrun mpirun; do
  if [ ! -s "$out/dp_$run.csv" ] || [ ! -s "$out/dp_none.csv" ]; then
    echo "== losses $run vs one process: not compared (a run wrote no losses)"
    continue
  fi
  paste -d, <(cut -d, -f3 "$out/dp_none.csv") <(cut -d, -f3 "$out/dp_$run.csv") | tail -n +2 | \
      awk -F, -v run="$run" '{d = $1 - $2; if (d < 0) d = -d; if (d > m) m = d; n++}
          NR % 10 == 0 {print "  step " NR ": one process " $1 ", " run " " $2}
          END {print "== losses " run " vs one process: " n " steps, largest |difference| " m + 0}'
done
exit 0
