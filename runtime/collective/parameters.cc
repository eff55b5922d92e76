// agree_on_parameters (parameters.h): every rank's sources (or a failed load's reason)
// exchanged, a hash compared with rank 0's, a broadcast of rank 0's values where nothing
// was loaded.
#include "runtime/collective/parameters.h"

#include <cstring>
#include <vector>

namespace weft::collective {
namespace {

constexpr uint64_t kFnvOffset = 14695981039346656037ull, kFnvPrime = 1099511628211ull;

void fnv1a(uint64_t& h, const void* data, size_t bytes) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < bytes; ++i) h = (h ^ p[i]) * kFnvPrime;
}

/// Every rank's `mine`, in rank order (one broadcast of the length and one of the bytes
/// from each rank in turn; a start-up cost only).
StatusOr<std::vector<std::string>> every_rank_string(Communicator& comm, const std::string& mine) {
  std::vector<std::string> all(static_cast<size_t>(comm.world_size()));
  for (int r = 0; r < comm.world_size(); ++r) {
    int64_t length = r == comm.rank() ? static_cast<int64_t>(mine.size()) : 0;
    WEFT_RETURN_IF_ERROR(comm.broadcast(&length, sizeof(length), r));
    std::string text = r == comm.rank() ? mine : std::string(static_cast<size_t>(length), '\0');
    if (length > 0) WEFT_RETURN_IF_ERROR(comm.broadcast(text.data(), length, r));
    all[static_cast<size_t>(r)] = std::move(text);
  }
  return all;
}

/// The ranks whose hash of `values` differs from rank 0's, known to every rank (rank 0's
/// hash broadcast, one flag per rank summed).
StatusOr<std::vector<int>> ranks_differing_from_root(Communicator& comm,
                                                     const std::map<std::string, Tensor>& values) {
  const uint64_t mine = hash_values(values);
  uint64_t root = mine;
  WEFT_RETURN_IF_ERROR(comm.broadcast(&root, sizeof(root), 0));
  std::vector<double> differs(static_cast<size_t>(comm.world_size()), 0.0);
  differs[static_cast<size_t>(comm.rank())] = mine == root ? 0.0 : 1.0;
  WEFT_RETURN_IF_ERROR(comm.all_reduce(differs.data(), static_cast<int64_t>(differs.size()), DType::f64,
                                       Reduction::sum));
  std::vector<int> out;
  for (size_t r = 0; r < differs.size(); ++r) {
    if (differs[r] != 0) out.push_back(static_cast<int>(r));
  }
  return out;
}

// What a rank whose load failed says in place of its source: this byte, the path, this
// byte again, the reason.
constexpr char kFailedLoad = '\x01';

// The first rank that said its load failed, as every rank's error.
Status check_no_failed_load(const std::vector<std::string>& sources) {
  for (size_t r = 0; r < sources.size(); ++r) {
    const std::string& s = sources[r];
    if (s.empty() || s[0] != kFailedLoad) continue;
    const size_t end = s.find(kFailedLoad, 1);
    return Error{"data parallelism: rank " + std::to_string(r) + " could not load " + s.substr(1, end - 1) +
                 " (" + s.substr(end + 1) + "); every rank stops"};
  }
  return Status();
}

std::string origin(const std::string& source) {
  return source.empty() ? "initialized from the seed" : "loaded from " + source;
}

Status broadcast_from_root(Communicator& comm, std::map<std::string, Tensor>& values) {
  for (auto& [name, value] : values) {
    Tensor copy(value.type());  // a buffer of its own: the map's may be shared
    std::memcpy(copy.raw_data(), value.raw_data(), value.bytes());
    WEFT_RETURN_IF_ERROR(comm.broadcast(copy.raw_data(), static_cast<int64_t>(copy.bytes()), 0));
    value = std::move(copy);
  }
  return Status();
}

}  // namespace

bool writes_checkpoints(const Communicator* comm) { return comm == nullptr || comm->rank() == 0; }

uint64_t hash_values(const std::map<std::string, Tensor>& values) {
  uint64_t h = kFnvOffset;
  for (const auto& [name, value] : values) {
    const std::string type = value.type().to_string();
    fnv1a(h, name.data(), name.size() + 1);
    fnv1a(h, type.data(), type.size() + 1);
    fnv1a(h, value.raw_data(), value.bytes());
  }
  return h;
}

Status agree_on_parameters(Communicator& comm, std::map<std::string, Tensor>& values,
                           const std::string& source) {
  if (comm.world_size() <= 1) return Status();
  WEFT_ASSIGN_OR_RETURN(std::vector<std::string> sources, every_rank_string(comm, source));
  WEFT_RETURN_IF_ERROR(check_no_failed_load(sources));
  bool loaded = false;
  for (const std::string& s : sources) loaded = loaded || !s.empty();
  if (!loaded) WEFT_RETURN_IF_ERROR(broadcast_from_root(comm, values));
  WEFT_ASSIGN_OR_RETURN(std::vector<int> differing, ranks_differing_from_root(comm, values));
  if (differing.empty()) return Status();
  const int r = differing.front();
  const std::string rank = "rank " + std::to_string(r);
  if (!loaded) {
    return Error{"data parallelism: " + rank + "'s parameters differ from rank 0's after the broadcast "
                 "from rank 0 (" + comm.describe() + " delivered different bytes)"};
  }
  return Error{"data parallelism: " + rank + "'s parameters differ from rank 0's (" + rank + "'s " +
               origin(sources[static_cast<size_t>(r)]) + ", rank 0's " + origin(sources[0]) +
               "); start every rank from the same checkpoint"};
}

Error agree_after_failed_load(Communicator& comm, const std::string& source, Error failure) {
  if (comm.world_size() > 1) {
    // The exchange's own failure aside: this rank reports its load's.
    (void)every_rank_string(comm, kFailedLoad + source + kFailedLoad + failure.message);
  }
  return failure;
}

}  // namespace weft::collective
