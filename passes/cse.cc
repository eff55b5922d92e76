#include "passes/cse.h"

#include <functional>
#include <unordered_map>

namespace weft {
namespace {

/// The node's attributes with every schema default filled in and ints widened where the
/// schema says float, so that equal computations compare equal.
Attrs canonical_attrs(const Node& node) {
  Attrs attrs = node.attrs;
  for (const AttrSpec& spec : node.info().attrs) {
    std::string name(spec.name);
    auto it = attrs.find(name);
    if (it == attrs.end()) {
      if (!spec.default_) continue;
      it = attrs.emplace(name, *spec.default_).first;
    }
    Attribute& a = it->second;
    if (spec.kind == AttrKind::Float && attr_kind(a) == AttrKind::Int) {
      a = static_cast<double>(std::get<int64_t>(a));
    } else if (spec.kind == AttrKind::Floats && attr_kind(a) == AttrKind::Ints) {
      const IntList& ints = std::get<IntList>(a);
      a = FloatList(ints.begin(), ints.end());
    }
  }
  return attrs;
}

/// What two nodes must share to be merged.
struct Key {
  Op op;
  std::vector<ValueId> operands;
  Attrs attrs;
  bool operator==(const Key&) const = default;
};

struct KeyHash {
  size_t operator()(const Key& k) const {
    size_t h = std::hash<int>()(static_cast<int>(k.op));
    auto mix = [&h](size_t v) { h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); };
    for (ValueId v : k.operands) mix(std::hash<ValueId>()(v));
    for (const auto& [name, value] : k.attrs) {
      mix(std::hash<std::string>()(name));
      mix(std::hash<std::string>()(attribute_to_string(value)));
    }
    return h;
  }
};

}  // namespace

StatusOr<bool> CsePass::run(Graph& g) {
  // replacement[v] is the value that stands for v after merging (v itself if kept).
  std::vector<ValueId> replacement(g.num_values());
  for (ValueId v = 0; v < g.num_values(); ++v) replacement[v] = v;
  std::unordered_map<Key, ValueId, KeyHash> first;
  std::vector<bool> keep(g.nodes().size(), true);
  bool merged_any = false;
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    Node& node = g.node(static_cast<int>(i));
    for (ValueId& o : node.operands) o = replacement[o];
    if (node.results.size() != 1) continue;  // statements are never merged
    if (node.body) continue;  // a loop's or kernel's body is not part of the key
    auto [it, inserted] = first.emplace(Key{node.op, node.operands, canonical_attrs(node)},
                                        node.result());
    if (inserted) continue;
    replacement[node.result()] = it->second;
    keep[i] = false;
    merged_any = true;
  }
  if (!merged_any) return false;
  for (ValueId& o : g.mutable_outputs()) o = replacement[o];
  g.remove_nodes(keep);
  return true;
}

}  // namespace weft
