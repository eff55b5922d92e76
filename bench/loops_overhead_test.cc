// bench/loops_overhead.h: the trips per step counted from a Program's loops (nested and
// early-exit ones included), a body made a Program of its own, and the overhead per trip
// computed from a synthetic profile.
#include "bench/loops_overhead.h"

#include <gtest/gtest.h>

#include "ir/scan.h"

namespace weft::bench {
namespace {

Invocation loop(int body, ScanShape shape) {
  Invocation inv;
  inv.kind = Invocation::Kind::loop;
  inv.node = Node{Op::Scan, {}, scan_attrs(shape), {}, {}};
  inv.body = body;
  return inv;
}

Invocation generated(int kernel) {
  Invocation inv;
  inv.kind = Invocation::Kind::generated;
  inv.kernel = kernel;
  return inv;
}

// @step: a kernel, a loop of 5 over @body0 (two kernels), a loop of at most 3 (an early
// exit) over @body1, which itself loops 4 times over @body0.
Program two_loops() {
  Program p;
  p.name = "step";
  p.kernels.resize(2);
  p.kernels[0].name = "k0";
  p.kernels[1].name = "k1";
  Program body0;
  body0.name = "body0";
  body0.code = {generated(0), generated(1)};
  Program body1;
  body1.name = "body1";
  body1.code = {loop(0, {.length = 4})};
  p.bodies = {body0, body1};
  p.code = {generated(0), loop(0, {.length = 5}), loop(1, {.length = 3, .carries = 1, .stop = 0})};
  return p;
}

TEST(LoopsOverhead, TripsPerStepCountNestedLoopsOncePerOuterTrip) {
  const Program p = two_loops();
  EXPECT_EQ(trips_per_step(p), 5 + 3 * (1 + 4));
  const std::vector<LoopSite> sites = loop_sites(p);
  ASSERT_EQ(sites.size(), 2u);
  EXPECT_EQ(sites[0].invocation, 1u);
  EXPECT_EQ(sites[0].body, 0);
  EXPECT_EQ(sites[0].body_name, "body0");
  EXPECT_EQ(sites[0].length, 5);
  EXPECT_FALSE(sites[0].early_exit);
  EXPECT_EQ(sites[0].nested_trips, 0);
  EXPECT_EQ(sites[1].invocation, 2u);
  EXPECT_EQ(sites[1].length, 3);
  EXPECT_TRUE(sites[1].early_exit);
  EXPECT_EQ(sites[1].nested_trips, 4);
}

TEST(LoopsOverhead, AProgramWithoutLoopsHasNoTrips) {
  Program p;
  p.code = {generated(0)};
  EXPECT_EQ(trips_per_step(p), 0);
  EXPECT_TRUE(loop_sites(p).empty());
}

TEST(LoopsOverhead, StandaloneBodyTakesTheRootsKernelsAndBodies) {
  const Program body = standalone_body(two_loops(), 1);
  EXPECT_EQ(body.name, "body1");
  ASSERT_EQ(body.code.size(), 1u);
  ASSERT_EQ(body.kernels.size(), 2u);
  EXPECT_EQ(body.kernels[1].name, "k1");
  EXPECT_EQ(body.bodies.size(), 2u);
  EXPECT_EQ(trips_per_step(body), 4);
}

TEST(LoopsOverhead, OverheadPerTripIsTheLoopLineLessItsBodyRuns) {
  const Program p = two_loops();
  // µs per step: the kernel 1, the first loop 60, the second 40; @body0 alone 10,
  // @body1 alone 12.
  StatusOr<std::vector<LoopCost>> costs =
      loop_costs(p, {1.0, 60.0, 40.0}, [](const Program& body) -> StatusOr<double> {
        EXPECT_EQ(body.kernels.size(), 2u);  // the root's
        return body.name == "body0" ? 10.0 : 12.0;
      });
  ASSERT_TRUE(costs.ok()) << costs.error().message;
  ASSERT_EQ(costs->size(), 2u);
  EXPECT_DOUBLE_EQ((*costs)[0].loop_us, 60.0);
  EXPECT_DOUBLE_EQ((*costs)[0].body_us, 10.0);
  EXPECT_DOUBLE_EQ((*costs)[0].overhead_us_per_trip(), (60.0 - 5 * 10.0) / 5);
  EXPECT_DOUBLE_EQ((*costs)[0].overhead_share(), 10.0 / 60.0);
  EXPECT_DOUBLE_EQ((*costs)[1].overhead_us_per_trip(), (40.0 - 3 * 12.0) / 3);
  EXPECT_EQ(format_loop_cost("feedback_fixed", "looped", (*costs)[0]),
            "feedback_fixed    looped    loop #1 5x over @body0: line 60.0 us, body 10.00 us alone, overhead 2.000 us "
            "per trip (16.7%)\n");
  EXPECT_EQ(format_loop_cost("m", "looped", (*costs)[1]),
            "m                 looped    loop #2 <=3x over @body1: line 40.0 us, body 12.00 us alone, overhead 1.333 us "
            "per trip (10.0%) (its body's own loops: 4 trips per run, in the body)\n");
}

TEST(LoopsOverhead, AProfileOfTheWrongLengthIsRefused) {
  StatusOr<std::vector<LoopCost>> costs =
      loop_costs(two_loops(), {1.0, 2.0}, [](const Program&) -> StatusOr<double> { return 1.0; });
  ASSERT_FALSE(costs.ok());
  EXPECT_EQ(costs.error().message, "loop_costs: a profile of 2 invocations for @step's 3");
}

TEST(LoopsOverhead, ABodysDeviceErrorIsPassedOn) {
  StatusOr<std::vector<LoopCost>> costs = loop_costs(
      two_loops(), {1.0, 2.0, 3.0}, [](const Program& body) -> StatusOr<double> { return Error{"no " + body.name}; });
  ASSERT_FALSE(costs.ok());
  EXPECT_EQ(costs.error().message, "no body0");
}

TEST(LoopsOverhead, DifferenceMethodDividesByTrips) {
  EXPECT_DOUBLE_EQ(difference_overhead_per_trip(300.0, 200.0, 20), 5.0);
  EXPECT_DOUBLE_EQ(difference_overhead_per_trip(300.0, 200.0, 0), 0.0);
}

}  // namespace
}  // namespace weft::bench
