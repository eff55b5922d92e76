#pragma once
// Internal to frontend/ (flow.cc): the checks a flow passes when it is built
// (flow_check.cc), and two helpers flow.cc shares with them.

#include <source_location>
#include <string>
#include <vector>

#include "frontend/flow.h"

namespace weft::flow_detail {

/// `FILE:LINE` of `loc`, as the flow's errors name an earlier call.
std::string where(const std::source_location& loc);

/// `m` as a nested Flow, or null.
const Flow* as_flow(const ModulePtr& m);

/// Why a value of type `t` cannot exist ("a dimension is negative", "its size in bytes does
/// not fit in 64 bits"), or "" when it can: build()'s input types and the parameters the
/// modules create (Linear(4, -3)) are refused with it before any op sees them.
std::string unrepresentable(const Type& t);

/// Checks one flow's structure (not its children's: they were checked when built):
/// each step in order (what may follow a split, the step's own rule, a fork's tag, the
/// labels of the flows it nests), then the whole (no split left unmerged, no label named
/// like a tag). Errors name the offending call.
Status validate(const std::vector<FlowStep>& steps);

/// An error when flow `f` is reachable from itself through nested flows; `stack` holds
/// the flows on the path to `f` (empty at the top).
Status check_cycles(const Flow* f, std::vector<const Flow*>& stack);

}  // namespace weft::flow_detail
