#!/usr/bin/env bash
# Benchmark (#32): the 2-rank CPU MLP step with the gradients' all_reduce blocking and
# overlapped with the backward pass, against 1 process and against PyTorch 1.13 DDP
# (gloo) on the same model, in one invocation, alternating the order per round. Every
# figure is rank 0's median of 55 steps (after 5 warm-up steps) of a 16-512-512-4 MLP,
# Adam, global batch 256, one thread per rank; then the median over the rounds.
# "in all_reduce calls" is the median time per step the step spent inside the
# communicator's calls (start, MPI_Testall, wait: cpu::Executor::all_reduce_us): with
# overlap, what the step did not hide. Hidden fraction = 1 - overlapped / blocking.
#
#   bench/ddp_overlap.sh [ROUNDS]      # 3 rounds by default
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
bazel build --noshow_progress --ui_event_filters=-info --jobs=2 //tests/data_parallel:train_mlp
bin=bazel-bin/tests/data_parallel/train_mlp
args="--hidden=512 --batch=256 --steps=60 --time"
mpi="env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader \
  OMPI_MCA_rmaps_base_oversubscribe=1 mpirun -np 2 -x WEFT_NUM_THREADS=1"
torch="env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE /usr/bin/python3 bench/pytorch/ddp_mlp.py \
  --threads=1 --hidden=512 --batch=256 --steps=60"
out=$(mktemp -d)
run() {  # NAME COMMAND...: appends rank 0's line to $out/NAME
  local name=$1; shift
  "$@" 2>&1 | grep -E "^(pytorch )?rank 0 of" >> "$out/$name"
}
configs=(one blocking overlapped torch_one torch_ddp)
for ((r = 0; r < rounds; ++r)); do
  order=("${configs[@]}")
  ((r % 2)) && order=($(printf '%s\n' "${configs[@]}" | tac))
  for c in "${order[@]}"; do
    case $c in
      one) run one env WEFT_NUM_THREADS=1 $bin --ranks=none $args ;;
      blocking) run blocking $mpi $bin --ranks=mpi --blocking $args ;;
      overlapped) run overlapped $mpi $bin --ranks=mpi $args ;;
      torch_one) run torch_one $torch --ranks=1 ;;
      torch_ddp) run torch_ddp $torch --ranks=2 ;;
    esac
  done
done
median() {  # FILE FIELD-AFTER: the median over the rounds of the number after WORDS
  grep -o "$2 [0-9.]*" "$1" | awk '{print $NF}' | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'
}
echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg), $(date -u '+%F %H:%M UTC'), commit $(git rev-parse --short HEAD)"
printf '%-34s %12s %18s\n' configuration "median step" "in all_reduce calls"
for c in one blocking overlapped torch_one torch_ddp; do
  step=$(median "$out/$c" "median step")
  calls=$( [[ $c == blocking || $c == overlapped ]] && median "$out/$c" "all_reduce calls" || echo "-")
  printf '%-34s %9s ms %15s %s\n' "$c" "$step" "$calls" "$([[ $calls == - ]] || echo ms)"
done
# Per round (the same round's blocking and overlapped runs, minutes apart at most), then
# the median of those fractions: load from other jobs moves both.
paste <(grep -o "all_reduce calls [0-9.]*" "$out/blocking" | awk '{print $NF}') \
      <(grep -o "all_reduce calls [0-9.]*" "$out/overlapped" | awk '{print $NF}') |
  awk '{ printf "%.4f round %d: all-reduce time hidden %.0f%% (1 - %s / %s ms)\n", 1 - $2 / $1, NR, 100 * (1 - $2 / $1), $2, $1 }' \
  > "$out/hidden"
cut -d' ' -f2- "$out/hidden"
sort -g "$out/hidden" | awk '{ f[NR] = $1 } END { printf "all-reduce time hidden by overlap, median of the rounds: %.0f%%\n", 100 * f[int((NR + 1) / 2)] }'
echo "per-round lines: $out"
