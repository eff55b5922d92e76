#include "runtime/backend.h"

#include <map>

namespace weft {
namespace {

// Function-local, so registrations from other translation units' static initializers
// find it constructed whatever the initialization order.
std::map<std::string, Backend>& registry() {
  static std::map<std::string, Backend> backends;
  return backends;
}

std::string joined_names() {
  std::string out;
  for (const std::string& n : backend_names()) out += (out.empty() ? "" : ", ") + n;
  return out.empty() ? "none" : out;
}

}  // namespace

const char* feature_flag(Feature feature) {
  switch (feature) {
    case Feature::check_numerics: return "--check-numerics";
    case Feature::profiler: return "--profile";
    case Feature::multi_rank: return "--data-parallel";
  }
  return "";
}

bool Backend::has(Feature feature) const {
  switch (feature) {
    case Feature::check_numerics: return set_check_numerics != nullptr;
    case Feature::profiler: return set_profiling != nullptr && profile_report != nullptr;
    case Feature::multi_rank: return multi_rank;
  }
  return false;
}

Error Backend::unsupported(Feature feature) const {
  std::string with;
  for (const auto& [n, b] : registry()) {
    if (b.has(feature)) with += (with.empty() ? "" : ", ") + n;
  }
  return Error{std::string(feature_flag(feature)) + " is not available on the " + name +
               " backend, which this model was compiled for" +
               (with.empty() ? std::string() : " (backends in this binary that have it: " + with + ")")};
}

StatusOr<std::shared_ptr<collective::Communicator>> Backend::communicator_for(
    std::shared_ptr<collective::Communicator> host, int local_rank, std::chrono::milliseconds timeout) const {
  if (host == nullptr || rank_communicator == nullptr) return host;
  return rank_communicator(std::move(host), local_rank, timeout);
}

bool register_backend(Backend backend) {
  WEFT_CHECK(backend.bind != nullptr, "register_backend: backend '" + backend.name + "' has no bind");
  const std::string name = backend.name;
  const bool added = registry().emplace(name, std::move(backend)).second;
  WEFT_CHECK(added, "register_backend: backend '" + name + "' registered twice");
  return true;
}

StatusOr<const Backend*> find_backend(const std::string& name) {
  auto it = registry().find(name);
  if (it == registry().end()) {
    return Error{"unknown backend '" + name + "'; this binary links: " + joined_names() +
                 " (a backend is linked by its //runtime/<name>:backend library)"};
  }
  return &it->second;
}

std::vector<std::string> backend_names() {
  std::vector<std::string> out;
  for (const auto& [n, b] : registry()) out.push_back(n);
  return out;
}

StatusOr<std::shared_ptr<collective::Communicator>> step_communicator(
    const std::string& name, std::shared_ptr<collective::Communicator> world, int local_rank,
    std::chrono::milliseconds timeout) {
  auto it = registry().find(name);
  if (it == registry().end()) return world;
  return it->second.communicator_for(std::move(world), local_rank, timeout);
}

}  // namespace weft
