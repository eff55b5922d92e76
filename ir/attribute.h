#pragma once
// Node attributes: int, float, string, bool, dtype, int list, float list.
// In `.wir` text: `1`, `1e-05` / `2.0`, `"none"`, `true`, `f32`, `[1, 2]`, `[0.5, 1.0]`.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "ir/dtype.h"

namespace weft {

using IntList = std::vector<int64_t>;
using FloatList = std::vector<double>;
using Attribute = std::variant<int64_t, double, std::string, bool, DType, IntList, FloatList>;
/// Attributes by name; ordered, so printing is deterministic.
using Attrs = std::map<std::string, Attribute>;

enum class AttrKind { Int, Float, Str, Bool, DType, Ints, Floats };

AttrKind attr_kind(const Attribute& a);
/// `int float str bool dtype ints floats`, as written in ops.def schemas.
std::string_view attr_kind_name(AttrKind kind);
std::optional<AttrKind> parse_attr_kind(std::string_view name);

/// Prints an attribute value as it appears in `.wir` text. Floats always carry a `.` or
/// an exponent (`2.0`, `1e-05`) and print the shortest string that round-trips.
std::string attribute_to_string(const Attribute& a);
/// Formats a double as `attribute_to_string` does (also used for `pad` values etc.).
std::string format_float(double v);

/// Parses one attribute literal in the `.wir` syntax (used for ops.def defaults and by
/// tools); nullopt if `text` is not a single well-formed literal.
std::optional<Attribute> parse_attribute_literal(std::string_view text);

}  // namespace weft
