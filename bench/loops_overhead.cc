#include "bench/loops_overhead.h"

#include <cstdio>

#include "ir/scan.h"

namespace weft::bench {
namespace {

// Iterations of the loops in `p.code` (a root or a body of `root`) per run of it, all
// levels: each loop's length times one trip plus its own body's loops.
int64_t loop_trips(const Program& root, const Program& p) {
  int64_t trips = 0;
  for (const Invocation& inv : p.code) {
    if (inv.kind != Invocation::Kind::loop) continue;
    trips += inv.node.int_attr("length") * (1 + loop_trips(root, root.bodies.at(static_cast<size_t>(inv.body))));
  }
  return trips;
}

}  // namespace

std::vector<LoopSite> loop_sites(const Program& root) {
  std::vector<LoopSite> sites;
  for (size_t i = 0; i < root.code.size(); ++i) {
    const Invocation& inv = root.code[i];
    if (inv.kind != Invocation::Kind::loop) continue;
    sites.push_back({.invocation = i,
                     .body = inv.body,
                     .body_name = root.bodies.at(static_cast<size_t>(inv.body)).name,
                     .length = inv.node.int_attr("length"),
                     .early_exit = scan_exit(inv.node).any(),
                     .nested_trips = loop_trips(root, root.bodies.at(static_cast<size_t>(inv.body)))});
  }
  return sites;
}

int64_t trips_per_step(const Program& root) { return loop_trips(root, root); }

Program standalone_body(const Program& root, int body) {
  Program p = root.bodies.at(static_cast<size_t>(body));
  p.kernels = root.kernels;
  p.bodies = root.bodies;
  return p;
}

double LoopCost::overhead_us_per_trip() const {
  if (site.length <= 0) return 0;
  return (loop_us - static_cast<double>(site.length) * body_us) / static_cast<double>(site.length);
}

double LoopCost::overhead_share() const {
  return loop_us > 0 ? overhead_us_per_trip() * static_cast<double>(site.length) / loop_us : 0;
}

StatusOr<std::vector<LoopCost>> loop_costs(const Program& root, const std::vector<double>& root_us,
                                           const BodyTimeFn& time_body) {
  if (root_us.size() != root.code.size()) {
    return Error{"loop_costs: a profile of " + std::to_string(root_us.size()) + " invocations for @" +
                 root.name + "'s " + std::to_string(root.code.size())};
  }
  std::vector<LoopCost> costs;
  for (const LoopSite& site : loop_sites(root)) {
    WEFT_ASSIGN_OR_RETURN(double body_us, time_body(standalone_body(root, site.body)));
    costs.push_back({.site = site, .loop_us = root_us[site.invocation], .body_us = body_us});
  }
  return costs;
}

double difference_overhead_per_trip(double looped_us, double unrolled_us, int64_t trips) {
  return trips > 0 ? (looped_us - unrolled_us) / static_cast<double>(trips) : 0;
}

std::string overhead_method_note() {
  return "loop overhead per trip, direct: (the profile's loop line - length x one run of its body, the body\n"
         "  bound alone on the same device and timed with the same clock, on warm data) / length: the loop's\n"
         "  bookkeeping and its slots' memory traffic.\n"
         "  difference: (the form's step - the unrolled step) / the form's trips per step (two medians).\n";
}

std::string format_loop_cost(const std::string& model, const std::string& form, const LoopCost& c) {
  char line[256];
  std::snprintf(line, sizeof(line),
                "%-17s %-9s loop #%zu %s%lldx over @%s: line %.1f us, body %.2f us alone, overhead %.3f us per trip (%.1f%%)",
                model.c_str(), form.c_str(), c.site.invocation, c.site.early_exit ? "<=" : "",
                static_cast<long long>(c.site.length), c.site.body_name.c_str(), c.loop_us, c.body_us, c.overhead_us_per_trip(),
                100.0 * c.overhead_share());
  std::string out = line;
  if (c.site.nested_trips > 0) {
    out += " (its body's own loops: " + std::to_string(c.site.nested_trips) + " trips per run, in the body)";
  }
  return out + "\n";
}

}  // namespace weft::bench
