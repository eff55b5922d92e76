#pragma once
// Every rank of a data-parallel job starts from the same parameters (DESIGN.md, decision
// 11): agree_on_parameters, called by the Trainer (frontend/training.h) and
// aot::CompiledModel (training/aot/compiled_model.h) when they are created and when they
// load a checkpoint (so the training driver, which trains either, gets it through them).
//
//   std::map<std::string, Tensor> values = ...;  // parameters, state, optimizer slots
//   WEFT_RETURN_IF_ERROR(agree_on_parameters(*comm, values, /*source=*/"ckpt.safetensors"));
//
// The rule: parameters initialized from the seed on every rank are made rank 0's by a
// broadcast, silently (ranks that drew differently, say from another seed, are fixed);
// but when any rank's parameters were loaded from a checkpoint, a rank whose loaded
// values differ from rank 0's is refused with an error naming the rank and where each
// side's values came from (resuming ranks from different checkpoints would train a
// model that is none of them). Either way the values are then checked equal by a hash.
// A rank whose checkpoint load failed takes part too (agree_after_failed_load), so the
// others learn it at once, with its reason, rather than wait for it until the timeout.

#include <cstdint>
#include <map>
#include <string>

#include "ir/status.h"
#include "runtime/collective/communicator.h"
#include "runtime/tensor.h"

namespace weft::collective {

/// Whether this process writes the job's checkpoints: rank 0 alone (every rank holds the
/// same values; one writer keeps ranks on a shared file system from racing), or the one
/// process when `comm` is null. The Trainer's and aot::CompiledModel's save() return at
/// once elsewhere.
bool writes_checkpoints(const Communicator* comm);

/// A 64-bit hash (FNV-1a) of every value's name, type and bytes, in the map's order.
uint64_t hash_values(const std::map<std::string, Tensor>& values);

/// Makes `values` (every rank's holds the same names and types: the ranks compiled the
/// same step, check_same_on_every_rank) equal to rank 0's on every rank, as the header
/// says. `source`: the checkpoint this rank's values were loaded from, or "" for values
/// initialized from the seed. Error (on every rank, the same message): "data
/// parallelism: rank 1's parameters differ from rank 0's (rank 1's loaded from B, rank
/// 0's loaded from A); start every rank from the same checkpoint". Every rank must call
/// it; nothing happens with one rank.
Status agree_on_parameters(Communicator& comm, std::map<std::string, Tensor>& values,
                           const std::string& source);

/// Where this rank's load of checkpoint `source` failed with `failure`: it takes part in
/// the other ranks' agree_on_parameters (which then fails on each of them, at once, with
/// "data parallelism: rank 1 could not load b.safetensors (REASON); every rank stops") and
/// returns `failure`. With one rank it only returns `failure`.
Error agree_after_failed_load(Communicator& comm, const std::string& source, Error failure);

}  // namespace weft::collective
