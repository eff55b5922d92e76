#pragma once
// The viewer (viz.h) for the CPU backend: the graph as the CPU backend runs it (after
// codegen::cpu_pipeline: fused, scheduled) with the arena plan it makes. This is what
// `weftc viz FILE.wir` shows.
//
//   StatusOr<Model> model = FlowBuilder::from(Linear(784, 256)).through(ReLU()).build(...);
//   viz::VizOptions options;
//   for (const auto& [tag, v] : model->tags()) options.tags[model->graph().value(v).name] = tag;
//   StatusOr<std::string> html = viz::cpu_graph_to_html(model->graph(), options);

#include <string>

#include "ir/graph.h"
#include "ir/status.h"
#include "passes/memory_plan.h"
#include "tools/viz/viz.h"

namespace weft::viz {

/// The arena plan the CPU backend makes for `g` in its current node order (as
/// codegen::lower_to_program does): parameters updated in place where that is safe
/// (updates_in_place, passes/merge_updates.h: outside the arena), then plan_memory.
StatusOr<MemoryPlan> cpu_memory_plan(const Graph& g);

/// Runs the CPU pipeline on `g` (type-inferred or not), plans its memory and renders the
/// page, with `options.plan` set to that plan and `options.backend` to "cpu".
StatusOr<std::string> cpu_graph_to_html(Graph g, VizOptions options = {});

}  // namespace weft::viz
