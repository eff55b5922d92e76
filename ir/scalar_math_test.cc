// The scalar math's NaN facts (ir/scalar_math.h, quiets_nans) checked against the math
// itself: signalling and quiet NaNs fed through every elementwise op's functor and every
// float reduction's combining math, in f32 and f64.

#include "ir/scalar_math.h"

#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

namespace weft {
namespace {

// A NaN of T with payload 1: signalling (quiet bit clear) or quiet.
template <typename T>
T nan_with_payload(bool quiet) {
  if constexpr (sizeof(T) == 4) {
    const uint32_t bits = 0x7f800001u | (quiet ? 0x00400000u : 0u);
    T x;
    std::memcpy(&x, &bits, 4);
    return x;
  } else {
    const uint64_t bits = 0x7ff0000000000001ull | (quiet ? 0x0008000000000000ull : 0ull);
    T x;
    std::memcpy(&x, &bits, 8);
    return x;
  }
}

template <typename T>
bool is_quiet_nan(T x) {
  if (x == x) return false;
  if constexpr (sizeof(T) == 4) {
    uint32_t bits;
    std::memcpy(&bits, &x, 4);
    return (bits & 0x00400000u) != 0;
  } else {
    uint64_t bits;
    std::memcpy(&bits, &x, 8);
    return (bits & 0x0008000000000000ull) != 0;
  }
}

template <typename R>
bool same_bits(R a, R b) {
  return std::memcmp(&a, &b, sizeof(R)) == 0;
}

// The other operands a NaN meets.
template <typename T>
std::vector<T> others() {
  return {T{0}, T{1.5}, -std::numeric_limits<T>::infinity(),
          std::numeric_limits<T>::infinity(), std::numeric_limits<T>::quiet_NaN()};
}

// What math M shows of `op`'s NaN handling in T: whether every result with a NaN operand
// is a quiet NaN, and whether some result depends on that operand's quiet bit. The
// operands pass through volatiles so that no call is folded at compile time.
struct Shown {
  bool always_quiet = true;
  bool depends_on_quiet_bit = false;
};

template <typename T, typename M>
void show_binary(Shown& shown) {
  for (int position = 0; position < 2; ++position) {
    for (T other : others<T>()) {
      const auto apply = [&](bool quiet) {
        volatile T nan = nan_with_payload<T>(quiet);
        volatile T rest = other;
        return position == 0 ? M::apply(T{nan}, T{rest}) : M::apply(T{rest}, T{nan});
      };
      const auto signalling = apply(false), quiet = apply(true);
      if constexpr (std::is_floating_point_v<decltype(signalling)>) {
        shown.always_quiet = shown.always_quiet && is_quiet_nan(signalling) && is_quiet_nan(quiet);
      } else {
        shown.always_quiet = false;  // A comparison gives a bool.
      }
      shown.depends_on_quiet_bit = shown.depends_on_quiet_bit || !same_bits(signalling, quiet);
    }
  }
}

template <typename T, typename M>
void show_unary(Shown& shown) {
  volatile T signalling_in = nan_with_payload<T>(false), quiet_in = nan_with_payload<T>(true);
  const T signalling = M::apply(T{signalling_in}), quiet = M::apply(T{quiet_in});
  shown.always_quiet = shown.always_quiet && is_quiet_nan(signalling) && is_quiet_nan(quiet);
  shown.depends_on_quiet_bit = shown.depends_on_quiet_bit || !same_bits(signalling, quiet);
}

// Shown for `op` in f32 and f64, or nullopt when no scalar math of floats is `op`'s here.
std::optional<Shown> show(Op op) {
  Shown shown;
  bool floats = false;
  const auto visit = [&](auto math) {
    using M = decltype(math);
    if constexpr ((M::kTypes & scalar::kFloats) != 0) {
      floats = true;
      if constexpr (requires { M::apply(1.0f, 1.0f); }) {
        show_binary<float, M>(shown);
        show_binary<double, M>(shown);
      } else {
        show_unary<float, M>(shown);
        show_unary<double, M>(shown);
      }
    }
  };
  if (!scalar::visit_binary_math(op, visit) && !scalar::visit_reduction_math(op, visit)) {
    scalar::visit_unary_math(op, visit);
  }
  if (!floats) return std::nullopt;
  return shown;
}

TEST(ScalarMath, OpsThatSayTheyQuietNaNsDoInTheirMath) {
  for (Op op : all_ops()) {
    if (!scalar::quiets_nans(op)) continue;
    SCOPED_TRACE(std::string(op_name(op)));
    std::optional<Shown> shown = show(op);
    ASSERT_TRUE(shown.has_value()) << "quiets_nans holds for an op with no float math here";
    EXPECT_TRUE(shown->always_quiet) << "a NaN operand gave a NaN that is not quiet";
    EXPECT_FALSE(shown->depends_on_quiet_bit)
        << "the result's bits depend on whether the NaN operand was signalling";
  }
}

TEST(ScalarMath, OpsWhoseMathShowsTheQuietBitDoNotSayTheyQuietNaNs) {
  std::set<std::string> shows;
  for (Op op : all_ops()) {
    std::optional<Shown> shown = show(op);
    if (!shown || !shown->depends_on_quiet_bit) continue;
    shows.insert(std::string(op_name(op)));
    EXPECT_FALSE(scalar::quiets_nans(op)) << op_name(op);
  }
  // neg, abs, relu, sign, floor pass the NaN on as it is, or flip its sign; pow(NaN, 0) is
  // 1 for a quiet NaN only. The math, not this list, decides: it pins what the check saw.
  EXPECT_TRUE(shows.count("neg") && shows.count("abs") && shows.count("pow"))
      << "the signalling NaNs were folded away or not fed";
}

TEST(ScalarMath, QuietsNaNsHoldsForAddSubMulDivSumAndMean) {
  std::set<std::string> says;
  for (Op op : all_ops()) {
    if (scalar::quiets_nans(op)) says.insert(std::string(op_name(op)));
  }
  EXPECT_EQ(says, (std::set<std::string>{"add", "sub", "mul", "div", "sum", "mean"}));
}

TEST(ScalarMath, FloatReductionsThatAddCombineWithAdd) {
  for (Op op : {Op::Sum, Op::Mean}) {
    bool add = false;
    EXPECT_TRUE(scalar::visit_reduction_math(
        op, [&](auto math) { add = std::is_same_v<decltype(math), scalar::Add>; }));
    EXPECT_TRUE(add) << op_name(op);
  }
  for (Op op : {Op::Max, Op::Min, Op::Argmax, Op::Add}) {
    EXPECT_FALSE(scalar::visit_reduction_math(op, [](auto) {})) << op_name(op);
  }
}

}  // namespace
}  // namespace weft
