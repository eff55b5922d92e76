#include "ir/attribute.h"

#include <charconv>
#include <cmath>
#include <cstdlib>

namespace weft {

AttrKind attr_kind(const Attribute& a) { return static_cast<AttrKind>(a.index()); }

std::string_view attr_kind_name(AttrKind kind) {
  switch (kind) {
    case AttrKind::Int: return "int";
    case AttrKind::Float: return "float";
    case AttrKind::Str: return "str";
    case AttrKind::Bool: return "bool";
    case AttrKind::DType: return "dtype";
    case AttrKind::Ints: return "ints";
    case AttrKind::Floats: return "floats";
  }
  return "?";
}

std::optional<AttrKind> parse_attr_kind(std::string_view name) {
  for (int k = 0; k <= static_cast<int>(AttrKind::Floats); ++k) {
    if (attr_kind_name(static_cast<AttrKind>(k)) == name) return static_cast<AttrKind>(k);
  }
  return std::nullopt;
}

std::string format_float(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), v);
  std::string s(buf, res.ptr);
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}

static std::string quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string attribute_to_string(const Attribute& a) {
  switch (attr_kind(a)) {
    case AttrKind::Int: return std::to_string(std::get<int64_t>(a));
    case AttrKind::Float: return format_float(std::get<double>(a));
    case AttrKind::Str: return quote(std::get<std::string>(a));
    case AttrKind::Bool: return std::get<bool>(a) ? "true" : "false";
    case AttrKind::DType: return std::string(dtype_name(std::get<DType>(a)));
    case AttrKind::Ints: {
      std::string out = "[";
      for (size_t i = 0; i < std::get<IntList>(a).size(); ++i) {
        out += (i ? ", " : "") + std::to_string(std::get<IntList>(a)[i]);
      }
      return out + "]";
    }
    case AttrKind::Floats: {
      std::string out = "[";
      for (size_t i = 0; i < std::get<FloatList>(a).size(); ++i) {
        out += (i ? ", " : "") + format_float(std::get<FloatList>(a)[i]);
      }
      return out + "]";
    }
  }
  return "?";
}

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// A number: int if it has no '.', 'e' or inf/nan, else double.
std::optional<Attribute> parse_number(std::string_view s) {
  if (s == "inf" || s == "+inf") return Attribute(INFINITY);
  if (s == "-inf") return Attribute(-INFINITY);
  if (s == "nan") return Attribute(NAN);
  if (s.empty()) return std::nullopt;
  bool is_float = s.find_first_of(".eE") != std::string_view::npos;
  const char* begin = s.data() + (s.front() == '+' ? 1 : 0);
  if (is_float) {
    double v = 0;
    auto res = std::from_chars(begin, s.data() + s.size(), v);
    if (res.ec != std::errc() || res.ptr != s.data() + s.size()) return std::nullopt;
    return Attribute(v);
  }
  int64_t v = 0;
  auto res = std::from_chars(begin, s.data() + s.size(), v);
  if (res.ec != std::errc() || res.ptr != s.data() + s.size()) return std::nullopt;
  return Attribute(v);
}

}  // namespace

std::optional<Attribute> parse_attribute_literal(std::string_view text) {
  std::string_view s = trim(text);
  if (s.empty()) return std::nullopt;
  if (s == "true") return Attribute(true);
  if (s == "false") return Attribute(false);
  if (auto d = parse_dtype(s)) return Attribute(*d);
  if (s.front() == '"') {
    if (s.size() < 2 || s.back() != '"') return std::nullopt;
    std::string out;
    for (size_t i = 1; i + 1 < s.size(); ++i) {
      if (s[i] == '\\' && i + 2 < s.size()) {
        ++i;
        out += s[i] == 'n' ? '\n' : s[i];
      } else if (s[i] == '"') {
        return std::nullopt;
      } else {
        out += s[i];
      }
    }
    return Attribute(out);
  }
  if (s.front() == '[') {
    if (s.back() != ']') return std::nullopt;
    std::string_view body = trim(s.substr(1, s.size() - 2));
    IntList ints;
    FloatList floats;
    bool any_float = false;
    while (!body.empty()) {
      size_t comma = body.find(',');
      std::string_view item = trim(body.substr(0, comma));
      auto v = parse_number(item);
      if (!v) return std::nullopt;
      if (attr_kind(*v) == AttrKind::Float) {
        any_float = true;
        floats.push_back(std::get<double>(*v));
      } else {
        floats.push_back(static_cast<double>(std::get<int64_t>(*v)));
        ints.push_back(std::get<int64_t>(*v));
      }
      if (comma == std::string_view::npos) break;
      body = trim(body.substr(comma + 1));
      if (body.empty()) return std::nullopt;  // trailing comma
    }
    if (any_float) return Attribute(floats);
    return Attribute(ints);
  }
  return parse_number(s);
}

}  // namespace weft
