#!/usr/bin/env bash
# Benchmark (#32): the 2-rank CPU MLP step with the gradients' all_reduce blocking and
# overlapped with the backward pass, against 1 process and against PyTorch 1.13 DDP
# (gloo) on the same model, in one invocation, alternating the order per round. Every
# figure is rank 0's median of 55 steps (after 5 warm-up steps) of a 16-512-512-4 MLP,
# Adam, global batch 256, one thread per rank; then the median over the rounds.
# "in all_reduce calls" is the median time per step the step spent inside the
# communicator's calls (start, test, wait: cpu::Executor::all_reduce_us): with
# overlap, what the step did not hide. Hidden fraction = 1 - overlapped / blocking.
# That counts only the executor's thread: work moved onto another thread of the rank
# (the MPI progress thread divides for the mean and copies the results out) leaves the
# calls but still takes a core from the compute on a machine whose cores the ranks fill.
# So each round also says what overlap saved of the step: (blocking step - overlapped
# step) / blocking time in the calls.
# The same 2 ranks over Gloo (torchrun-style: RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT;
# world.h), blocking and overlapped (Gloo's collective thread), too. split_blocking and
# split_overlapped are the MPI runs with the 512×512 weight gradient computed in 2 row
# blocks, each reduced in its own bucket (--split_bytes=1048576: TrainOptions::
# split_gradient_bytes, off by default; passes/split_gradients.h), in the same rounds. Last, the bucket
# plan's counts: where each bucket's reduction starts and is waited for (invocations),
# the flops and the measured CPU time of the invocations in between.
#
#   bench/ddp_overlap.sh [ROUNDS] [WEFT FLAGS]      # 3 rounds by default
#   bench/ddp_overlap.sh 5 --first_bucket_bytes=65536     # flags for every weft run
#   CONFIGS="blocking overlapped" bench/ddp_overlap.sh 5  # a subset of the configurations
#   TRAIN_MLP=/tmp/old/train_mlp CONFIGS="blocking overlapped" bench/ddp_overlap.sh 5
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
extra=${2:-}
# TRAIN_MLP=PATH: another build of train_mlp (an older commit's, for a before/after).
if [[ -z ${TRAIN_MLP:-} ]]; then
  bazel build --noshow_progress --ui_event_filters=-info --jobs=2 //tests/data_parallel:train_mlp
fi
bin=${TRAIN_MLP:-bazel-bin/tests/data_parallel/train_mlp}
args="--hidden=512 --batch=256 --steps=60 --time $extra"
split="--split_bytes=1048576"
mpi="env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader \
  OMPI_MCA_rmaps_base_oversubscribe=1 mpirun -np 2 -x WEFT_NUM_THREADS=1"
torch="env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE /usr/bin/python3 bench/pytorch/ddp_mlp.py \
  --threads=1 --hidden=512 --batch=256 --steps=60"
out=$(mktemp -d)
run() {  # NAME COMMAND...: appends rank 0's line to $out/NAME
  local name=$1; shift
  "$@" 2>&1 | grep -E "^(pytorch )?rank 0 of" >> "$out/$name"
}
# gloo ARGS...: 2 torchrun-style ranks of train_mlp on this machine (Gloo over TCP).
gloo() {
  local port=$((20000 + RANDOM % 20000))
  local env="env WEFT_NUM_THREADS=1 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port"
  $env RANK=1 $bin --ranks=launch "$@" > /dev/null 2>&1 &
  $env RANK=0 $bin --ranks=launch "$@"
  wait
}
all=(one blocking overlapped split_blocking split_overlapped gloo_blocking gloo_overlapped torch_one torch_ddp)
read -r -a configs <<< "${CONFIGS:-${all[*]}}"
for ((r = 0; r < rounds; ++r)); do
  order=("${configs[@]}")
  ((r % 2)) && order=($(printf '%s\n' "${configs[@]}" | tac))
  for c in "${order[@]}"; do
    case $c in
      one) run one env WEFT_NUM_THREADS=1 $bin --ranks=none $args ;;
      blocking) run blocking $mpi $bin --ranks=mpi --blocking $args ;;
      overlapped) run overlapped $mpi $bin --ranks=mpi $args ;;
      split_blocking) run split_blocking $mpi $bin --ranks=mpi --blocking $split $args ;;
      split_overlapped) run split_overlapped $mpi $bin --ranks=mpi $split $args ;;
      gloo_blocking) run gloo_blocking gloo --blocking $args ;;
      gloo_overlapped) run gloo_overlapped gloo $args ;;
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
for c in "${configs[@]}"; do
  step=$(median "$out/$c" "median step")
  calls=$( [[ $c == *blocking || $c == *overlapped ]] && median "$out/$c" "all_reduce calls" || echo "-")
  printf '%-34s %9s ms %15s %s\n' "$c" "$step" "$calls" "$([[ $calls == - ]] || echo ms)"
done
# Per round (the same round's blocking and overlapped runs, minutes apart at most), then
# the median of those fractions: load from other jobs moves both.
hidden() {  # NAME PREFIX: the fractions of PREFIXblocking against PREFIXoverlapped
  [[ -s "$out/${2}blocking" && -s "$out/${2}overlapped" ]] || return 0
  steps_and_calls() { sed -E 's/.*median step ([0-9.]+) .*all_reduce calls ([0-9.]+).*/\1 \2/' "$1"; }
  # Per round: blocking step, calls; overlapped step, calls.
  paste -d' ' <(steps_and_calls "$out/${2}blocking") <(steps_and_calls "$out/${2}overlapped") |
    awk '{ printf "%.4f %.4f round %d: all-reduce time hidden %.0f%% (1 - %s / %s ms); step saved %.0f%% of it (%s - %s ms)\n",
           1 - $4 / $2, ($1 - $3) / $2, NR, 100 * (1 - $4 / $2), $4, $2, 100 * ($1 - $3) / $2, $1, $3 }' \
    > "$out/${2}hidden"
  sed -E "s/^[^ ]* [^ ]* /$1 /" "$out/${2}hidden"
  median_of() { sort -g -k"$1" "$out/${2}hidden" | awk -v k="$1" '{ f[NR] = $k } END { printf "%.0f%%", 100 * f[int((NR + 1) / 2)] }'; }
  echo "$1: all-reduce time hidden by overlap, median of the rounds: $(median_of 1 "$2") (in the calls); $(median_of 2 "$2") (the step saved)"
}
hidden MPI ""
hidden "MPI split" split_
hidden Gloo gloo_
# The bucket plans of the same 2-rank step, in counts that do not depend on the load: each
# bucket's elements, the invocation after which its reduction starts (its last member),
# the one that waits for it, and how many invocations and flops (runtime/cpu/cost.h) run
# in between (what can hide it): the default's, then the split's (split_*).
for plan in "" "$split"; do
  echo "plan${plan:+ with $plan}:"
  $mpi $bin --ranks=mpi --hidden=512 --batch=256 --steps=1 --describe $plan $extra 2>&1 |
    grep "one call on" |
    sed -E 's/^ *([0-9]+) .*one call on ([0-9]+) elements.*waited before invocation ([0-9]+) \(([0-9.]+) of the step.s ([0-9.]+) MFLOP.*/\1 \2 \3 \4 \5/' |
    awk '{ printf "bucket %d: %d elements, starts after invocation %d, waited for before %d: %d invocations, %s of the step'"'"'s %s MFLOP in between\n", NR - 1, $2, $1, $3, $3 - $1 - 1, $4, $5 }'
  # The same, measured: the CPU time per step of the invocations between each bucket's
  # start and its wait (train_mlp --profile; WEFT_PROFILE_CLOCK=thread, which load hardly
  # moves). Against the blocking "in all_reduce calls": the most overlap can hide.
  $mpi -x WEFT_PROFILE_CLOCK=thread $bin --ranks=mpi --hidden=512 --batch=256 --steps=60 --profile $plan $extra 2>&1 |
    grep "in flight over"
done
echo "per-round lines: $out"
