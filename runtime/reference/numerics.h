#pragma once
// Numerics checking ([Reliability], `--check-numerics`): where does the first NaN or
// infinity of a step come from? Every backend reports it the same way — the first op, in
// execution order, whose result holds a non-finite value, with that op's source location
// (the `.wir` line, or the C++ builder call site and builder path):
//
//   model.cc:42:7: error: check-numerics: log produced -inf in %h3 (f32[128,10], element 17)
//     (encoder > Linear(256->10))
//
// A graph input (data, a parameter, optimizer state) that already holds one is reported
// as `input %x holds nan (...)`. Inside a fused kernel the culprit is found among the
// kernel body's nodes, which keep their own locations (runtime/cpu/executor.h); inside a
// loop, among its body's nodes, with the iteration (explain_loop).
//
//   Status s = weft::reference::check_numerics(g, inputs);   // reference backend

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/status.h"
#include "runtime/tensor.h"

namespace weft::reference {

/// The first element of `t` that is NaN or ±infinity (f32, f64, f16, bf16), or -1 (also
/// for integer and bool tensors, which have none).
int64_t first_nonfinite(const Tensor& t);
/// The same for raw bytes of `type`.
int64_t first_nonfinite(const void* data, const Type& type);

/// Element `index` of raw bytes of `type`, as a double (floats only).
double element_value(const void* data, const Type& type, int64_t index);

/// The error for value `name` of `type`, whose element `index` is `value`, produced by
/// `node` (its op and location), or held by a graph input when `node` is nullptr (then
/// `input_loc` is its location). An empty `name` is left out of the message.
Error nonfinite_error(const Node* node, const std::string& name, const Type& type, int64_t index,
                      double value, const Location& input_loc = {});

/// A non-finite value found by find_nonfinite.
struct NonFinite {
  int node = -1;     ///< Index into g.nodes() of its producer; -1: graph input `input`.
  int input = -1;
  ValueId value = kNoValue;
  Type type;
  int64_t index = 0;  ///< The first non-finite element.
  double element = 0;
  /// When the producer has a body (a loop, a fused kernel) and an op of it made the value:
  /// the error naming that op and its location, and for a loop the iteration (nested
  /// bodies: each level's), found by stepping the loop (explain_loop) or running the body.
  std::optional<Error> inside;
};

/// Runs `g` on `inputs` with the reference interpreter (every node result kept), and
/// finds the first input, then the first node result in graph order, that holds a NaN or
/// an infinity; nullopt when none does. Errors are the interpreter's.
StatusOr<std::optional<NonFinite>> find_nonfinite(const Graph& g, std::vector<Tensor> inputs);

/// What an error found inside a loop's body says of where: ", in iteration 2 of the loop
/// at model.wir:4:3" (every backend's check-numerics; nested loops append one per level).
std::string loop_iteration_suffix(int64_t slot, const Location& loop);

/// Steps loop `node` (a typed `scan`, its results of `result_types`) on `operands` with the
/// reference interpreter, checking each iteration's body node by node, and returns the
/// error for the first body op that makes a NaN or an infinity:
///
///   model.wir:7:7: error: check-numerics: log produced nan in %l (f32[2], element 0), in
///   iteration 2 of the loop at model.wir:4:3
///
/// nullopt when no body op does (the loop passed a non-finite operand through).
StatusOr<std::optional<Error>> explain_loop(const Node& node, const std::vector<Tensor>& operands,
                                            const std::vector<Type>& result_types);

/// Runs `g` on `inputs` with the reference interpreter (every node result kept), and
/// returns the error above for the first input, then the first node in graph order,
/// whose value holds a NaN or an infinity; ok when none does. Other errors are the
/// interpreter's.
Status check_numerics(const Graph& g, std::vector<Tensor> inputs);

}  // namespace weft::reference
