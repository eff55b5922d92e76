#include "ir/fused_kind.h"

#include <array>

#include "ir/status.h"

namespace weft {
namespace {

// The one name table: enum order.
constexpr std::array<std::string_view, 4> kNames = {"elementwise", "reduction", "row",
                                                    "contraction"};

// The body starts with a contraction of its first two inputs (a fused contraction's
// layout, passes/fuse_contraction_epilogue.h).
bool starts_with_contraction(const Graph& body) {
  if (body.inputs().size() < 2 || body.nodes().empty()) return false;
  const Node& first = body.node(0);
  return first.info().category == OpCategory::Contraction && first.operands.size() == 2 &&
         first.operands[0] == body.inputs()[0].value &&
         first.operands[1] == body.inputs()[1].value;
}

// The body's one output is computed by a reduction, and it is the body's only one.
bool ends_in_its_one_reduction(const Graph& body, int reductions) {
  if (reductions != 1 || body.outputs().size() != 1) return false;
  const int p = body.value(body.outputs()[0]).node;
  return p >= 0 && body.node(p).info().category == OpCategory::Reduction;
}

std::string written(FusedKind kind) {
  return "fused {kind=\"" + std::string(fused_kind_name(kind)) + "\"}";
}

}  // namespace

std::string_view fused_kind_name(FusedKind kind) { return kNames[static_cast<size_t>(kind)]; }

std::optional<FusedKind> parse_fused_kind(std::string_view name) {
  for (size_t k = 0; k < kNames.size(); ++k) {
    if (kNames[k] == name) return static_cast<FusedKind>(k);
  }
  return std::nullopt;
}

std::optional<std::string> check_fused_kind_name(std::string_view name) {
  if (parse_fused_kind(name)) return std::nullopt;
  std::string kinds;
  for (std::string_view k : kNames) kinds += (kinds.empty() ? "" : ", ") + std::string(k);
  return "unknown kind '" + std::string(name) + "' of 'fused'; the kinds are " + kinds;
}

FusedKind fused_kind(const Node& node) {
  WEFT_CHECK(node.op == Op::Fused, "fused_kind: not a 'fused' node");
  const std::optional<FusedKind> kind = parse_fused_kind(node.str_attr("kind"));
  WEFT_CHECK(kind.has_value(), "fused_kind: unknown kind '" + node.str_attr("kind") + "'");
  return *kind;
}

void set_fused_kind(Node& node, FusedKind kind) {
  if (kind == FusedKind::elementwise) {
    node.attrs.erase("kind");
  } else {
    node.attrs["kind"] = std::string(fused_kind_name(kind));
  }
}

std::optional<FusedKind> body_fused_kind(const Graph& body) {
  if (starts_with_contraction(body)) return FusedKind::contraction;
  int reductions = 0;
  for (const Node& n : body.nodes()) {
    const OpCategory c = n.info().category;
    if (c == OpCategory::Contraction) return std::nullopt;
    reductions += c == OpCategory::Reduction;
  }
  if (reductions == 0) return FusedKind::elementwise;
  return ends_in_its_one_reduction(body, reductions) ? FusedKind::reduction : FusedKind::row;
}

std::optional<std::string> check_fused_body(const Node& node) {
  if (node.op != Op::Fused || node.body == nullptr) return std::nullopt;
  const std::optional<FusedKind> kind = parse_fused_kind(node.str_attr("kind"));
  if (!kind) return std::nullopt;
  const std::optional<FusedKind> structure = body_fused_kind(*node.body);
  if (structure == kind) return std::nullopt;
  if (*kind == FusedKind::contraction) {
    return written(*kind) +
           ": the body must start with a contraction of its first two inputs "
           "(passes/fuse_contraction_epilogue.h)";
  }
  if (!structure) {
    return written(*kind) +
           ": the body has a contraction that is not its first node; only a body of kind "
           "\"contraction\" holds one, first (ir/fused_kind.h)";
  }
  return written(*kind) + ": the body has the structure of kind \"" +
         std::string(fused_kind_name(*structure)) + "\"; write {kind=\"" +
         std::string(fused_kind_name(*structure)) + "\"} (ir/fused_kind.h)";
}

}  // namespace weft
