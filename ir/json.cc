#include "ir/json.h"

#include "ir/text_util.h"

#include <cmath>
#include <limits>
#include <optional>
#include <nlohmann/json.hpp>

#include "ir/schema_check.h"

namespace weft {
namespace {

// Ordered, so that documents list fields in the order JSON.md does (version first).
using Json = nlohmann::ordered_json;

constexpr int kVersion = 1;

// ---- Export -------------------------------------------------------------------------

Json float_json(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

Json type_json(const Type& t) {
  return Json{{"dtype", dtype_name(t.dtype)}, {"shape", t.shape.dims}};
}

Json attribute_json(const Attribute& a) {
  Json value;
  switch (attr_kind(a)) {
    case AttrKind::Int: value = std::get<int64_t>(a); break;
    case AttrKind::Float: value = float_json(std::get<double>(a)); break;
    case AttrKind::Str: value = std::get<std::string>(a); break;
    case AttrKind::Bool: value = std::get<bool>(a); break;
    case AttrKind::DType: value = dtype_name(std::get<DType>(a)); break;
    case AttrKind::Ints: value = std::get<IntList>(a); break;
    case AttrKind::Floats:
      value = Json::array();
      for (double v : std::get<FloatList>(a)) value.push_back(float_json(v));
      break;
  }
  return Json{{attr_kind_name(attr_kind(a)), std::move(value)}};
}

// Writes `loc` into `object["loc"]` unless it is entirely unknown.
void put_location(Json& object, const Location& loc) {
  if (loc == Location{}) return;
  Json j{{"file", loc.file}, {"line", loc.line}, {"col", loc.col}};
  if (!loc.path.empty()) j["path"] = loc.path;
  object["loc"] = std::move(j);
}

Json graph_json(const Graph& g) {
  Json inputs = Json::array();
  for (const Input& input : g.inputs()) {
    Json j{{"name", g.value(input.value).name},
           {"kind", input_kind_name(input.kind)},
           {"type", type_json(g.type(input.value))}};
    put_location(j, input.loc);
    inputs.push_back(std::move(j));
  }
  Json nodes = Json::array();
  for (const Node& n : g.nodes()) {
    Json operands = Json::array();
    for (ValueId v : n.operands) operands.push_back(g.value(v).name);
    Json results = Json::array();
    for (ValueId v : n.results) {
      Json r{{"name", g.value(v).name}};
      if (g.value(v).type) r["type"] = type_json(*g.value(v).type);
      results.push_back(std::move(r));
    }
    Json j{{"op", op_name(n.op)}, {"operands", std::move(operands)}, {"results", std::move(results)}};
    if (!n.attrs.empty()) {
      Json attrs = Json::object();
      for (const auto& [name, value] : n.attrs) attrs[name] = attribute_json(value);
      j["attrs"] = std::move(attrs);
    }
    put_location(j, n.loc);
    if (n.body) j["body"] = graph_json(*n.body);
    nodes.push_back(std::move(j));
  }
  Json outputs = Json::array();
  for (ValueId v : g.outputs()) outputs.push_back(g.value(v).name);
  Json declared = Json::array();
  for (const Type& t : g.declared_output_types()) declared.push_back(type_json(t));
  Json doc{{"version", kVersion}, {"name", g.name()}};
  put_location(doc, g.loc());
  doc["inputs"] = std::move(inputs);
  doc["nodes"] = std::move(nodes);
  doc["outputs"] = std::move(outputs);
  doc["declared_output_types"] = std::move(declared);
  return doc;
}

// Appends `j` on one line (`{"dtype": "f32", "shape": [4, 6]}`); returns false as soon
// as `out` grows past `limit` characters.
bool write_flat(const Json& j, std::string& out, size_t limit) {
  if (j.is_array() || j.is_object()) {
    out += j.is_array() ? "[" : "{";
    bool first = true;
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (!first) out += ", ";
      first = false;
      if (j.is_object()) out += Json(it.key()).dump() + ": ";
      if (!write_flat(*it, out, limit)) return false;
    }
    out += j.is_array() ? "]" : "}";
  } else {
    // Strings that are not valid UTF-8 cannot be JSON; their bad bytes become U+FFFD.
    out += j.dump(-1, ' ', /*ensure_ascii=*/false, Json::error_handler_t::replace);
  }
  return out.size() <= limit;
}

// Like nlohmann's pretty printer, but a container that fits in the rest of a 100-column
// line stays on it, so types, locations and operand lists read as one line each.
void write_pretty(const Json& j, int indent, int depth, size_t column, std::string& out) {
  constexpr size_t kWidth = 100;
  std::string flat;
  if (!(j.is_array() || j.is_object()) || j.empty() ||
      (column < kWidth && write_flat(j, flat, kWidth - column))) {
    if (flat.empty()) write_flat(j, flat, std::string::npos);
    out += flat;
    return;
  }
  std::string inner(static_cast<size_t>(indent) * (depth + 1), ' ');
  out += j.is_array() ? "[" : "{";
  bool first = true;
  for (auto it = j.begin(); it != j.end(); ++it) {
    out += first ? "\n" : ",\n";
    first = false;
    out += inner;
    size_t line_start = out.size() - inner.size();
    if (j.is_object()) out += Json(it.key()).dump() + ": ";
    write_pretty(*it, indent, depth + 1, out.size() - line_start, out);
  }
  out += "\n" + std::string(static_cast<size_t>(indent) * depth, ' ') + (j.is_array() ? "]" : "}");
}

// ---- Import -------------------------------------------------------------------------

// Validates a parsed document field by field. Every method returns an error naming the
// JSON path of the offending field.
class Reader {
 public:
  /// Reads a graph that is a body at depth `body_depth` (0: the top-level graph).
  explicit Reader(std::string_view filename, int body_depth = 0)
      : filename_(filename), body_depth_(body_depth) {}

  StatusOr<Graph> read(const Json& doc);

 private:
  Error error(const std::string& path, const std::string& message) const {
    return Error{path.empty() ? message : path + ": " + message, Location{filename_, 0, 0, ""}};
  }
  Error wrong_type(const std::string& path, const char* expected, const Json& j) const {
    return error(path, std::string("expected ") + expected + ", found " + j.type_name());
  }
  /// `j` must be an object whose keys are among `allowed` and include `required`.
  Status check_object(const Json& j, const std::string& path,
                      std::initializer_list<const char*> required,
                      std::initializer_list<const char*> optional) const;
  Status check_array(const Json& j, const std::string& path) const {
    if (!j.is_array()) return wrong_type(path, "an array", j);
    return Status::ok_status();
  }
  StatusOr<std::string> read_string(const Json& j, const std::string& path) const;
  StatusOr<int64_t> read_int(const Json& j, const std::string& path) const;
  StatusOr<double> read_float(const Json& j, const std::string& path) const;
  StatusOr<DType> read_dtype(const Json& j, const std::string& path) const;
  StatusOr<Type> read_type(const Json& j, const std::string& path) const;
  StatusOr<Location> read_location(const Json& object, const std::string& path) const;
  StatusOr<Attribute> read_attribute(const Json& j, const std::string& path) const;
  /// A name for a new value: a non-empty string not defined yet.
  StatusOr<std::string> read_new_name(const Json& j, const std::string& path) const;
  StatusOr<ValueId> read_use(const Json& j, const std::string& path) const;
  Status read_input(const Json& j, const std::string& path);
  Status read_node(const Json& j, const std::string& path);

  std::string filename_;
  int body_depth_ = 0;  ///< The depth of the graph being read as a body (0: top level).
  Graph graph_;
};

std::string at_index(const std::string& path, size_t i) {
  return path + "[" + std::to_string(i) + "]";
}

Status Reader::check_object(const Json& j, const std::string& path,
                            std::initializer_list<const char*> required,
                            std::initializer_list<const char*> optional) const {
  if (!j.is_object()) return wrong_type(path, "an object", j);
  for (const char* key : required) {
    if (!j.contains(key)) return error(path, std::string("missing field '") + key + "'");
  }
  for (const auto& [key, value] : j.items()) {
    bool known = false;
    for (const char* k : required) known = known || key == k;
    for (const char* k : optional) known = known || key == k;
    if (!known) return error(path, "unknown field '" + key + "'");
  }
  return Status::ok_status();
}

StatusOr<std::string> Reader::read_string(const Json& j, const std::string& path) const {
  if (!j.is_string()) return wrong_type(path, "a string", j);
  return j.get<std::string>();
}

StatusOr<int64_t> Reader::read_int(const Json& j, const std::string& path) const {
  if (!j.is_number_integer()) return wrong_type(path, "an integer", j);
  if (j.is_number_unsigned() &&
      j.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return error(path, "integer out of range for a 64-bit int");
  }
  return j.get<int64_t>();
}

StatusOr<double> Reader::read_float(const Json& j, const std::string& path) const {
  if (j.is_number()) return j.get<double>();
  if (j.is_string()) {
    const std::string& s = j.get_ref<const std::string&>();
    if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
    if (s == "inf") return std::numeric_limits<double>::infinity();
    if (s == "-inf") return -std::numeric_limits<double>::infinity();
    return error(path, "expected a number or \"nan\", \"inf\", \"-inf\", found \"" + s + "\"");
  }
  return wrong_type(path, "a number", j);
}

StatusOr<DType> Reader::read_dtype(const Json& j, const std::string& path) const {
  WEFT_ASSIGN_OR_RETURN(std::string name, read_string(j, path));
  auto dtype = parse_dtype(name);
  if (!dtype) {
    return error(path, "unknown dtype '" + name + "'; expected one of f32, f64, f16, bf16, "
                       "i32, i64, u8, bool");
  }
  return *dtype;
}

StatusOr<Type> Reader::read_type(const Json& j, const std::string& path) const {
  WEFT_RETURN_IF_ERROR(check_object(j, path, {"dtype", "shape"}, {}));
  Type type;
  WEFT_ASSIGN_OR_RETURN(type.dtype, read_dtype(j["dtype"], path + ".dtype"));
  WEFT_RETURN_IF_ERROR(check_array(j["shape"], path + ".shape"));
  for (size_t i = 0; i < j["shape"].size(); ++i) {
    std::string dim_path = at_index(path + ".shape", i);
    WEFT_ASSIGN_OR_RETURN(int64_t dim, read_int(j["shape"][i], dim_path));
    if (dim < 0) return error(dim_path, "a dimension must be non-negative, found " + std::to_string(dim));
    type.shape.dims.push_back(dim);
  }
  return type;
}

StatusOr<Location> Reader::read_location(const Json& object, const std::string& path) const {
  if (!object.contains("loc")) return Location{};
  const Json& j = object["loc"];
  std::string loc_path = path.empty() ? "loc" : path + ".loc";
  WEFT_RETURN_IF_ERROR(check_object(j, loc_path, {"file", "line", "col"}, {"path"}));
  Location loc;
  WEFT_ASSIGN_OR_RETURN(loc.file, read_string(j["file"], loc_path + ".file"));
  for (const char* key : {"line", "col"}) {
    WEFT_ASSIGN_OR_RETURN(int64_t n, read_int(j[key], loc_path + "." + key));
    if (n < 0 || n > std::numeric_limits<int>::max()) {
      return error(loc_path + "." + key, "out of range: " + std::to_string(n));
    }
    (std::string_view(key) == "line" ? loc.line : loc.col) = static_cast<int>(n);
  }
  if (j.contains("path")) {
    WEFT_ASSIGN_OR_RETURN(loc.path, read_string(j["path"], loc_path + ".path"));
  }
  return loc;
}

StatusOr<Attribute> Reader::read_attribute(const Json& j, const std::string& path) const {
  if (!j.is_object() || j.size() != 1) {
    return error(path, "expected an object with one kind tag such as {\"int\": 3} or "
                       "{\"floats\": [0.5]}, found " + j.dump());
  }
  const std::string& tag = j.begin().key();
  const Json& v = j.begin().value();
  std::string value_path = path + "." + tag;
  auto kind = parse_attr_kind(tag);
  if (!kind) {
    return error(path, "unknown attribute kind '" + tag + "'; expected one of int, float, "
                       "str, bool, dtype, ints, floats");
  }
  switch (*kind) {
    case AttrKind::Int: {
      WEFT_ASSIGN_OR_RETURN(int64_t x, read_int(v, value_path));
      return Attribute(x);
    }
    case AttrKind::Float: {
      WEFT_ASSIGN_OR_RETURN(double x, read_float(v, value_path));
      return Attribute(x);
    }
    case AttrKind::Str: {
      WEFT_ASSIGN_OR_RETURN(std::string x, read_string(v, value_path));
      return Attribute(std::move(x));
    }
    case AttrKind::Bool:
      if (!v.is_boolean()) return wrong_type(value_path, "a boolean", v);
      return Attribute(v.get<bool>());
    case AttrKind::DType: {
      WEFT_ASSIGN_OR_RETURN(DType x, read_dtype(v, value_path));
      return Attribute(x);
    }
    case AttrKind::Ints: {
      WEFT_RETURN_IF_ERROR(check_array(v, value_path));
      IntList list;
      for (size_t i = 0; i < v.size(); ++i) {
        WEFT_ASSIGN_OR_RETURN(int64_t x, read_int(v[i], at_index(value_path, i)));
        list.push_back(x);
      }
      return Attribute(std::move(list));
    }
    case AttrKind::Floats: {
      WEFT_RETURN_IF_ERROR(check_array(v, value_path));
      FloatList list;
      for (size_t i = 0; i < v.size(); ++i) {
        WEFT_ASSIGN_OR_RETURN(double x, read_float(v[i], at_index(value_path, i)));
        list.push_back(x);
      }
      return Attribute(std::move(list));
    }
  }
  return error(path, "unknown attribute kind");
}

StatusOr<std::string> Reader::read_new_name(const Json& j, const std::string& path) const {
  WEFT_ASSIGN_OR_RETURN(std::string name, read_string(j, path));
  if (name.empty()) return error(path, "a value name must not be empty");
  if (graph_.find_value(name)) return error(path, "value '%" + name + "' is defined twice");
  return name;
}

StatusOr<ValueId> Reader::read_use(const Json& j, const std::string& path) const {
  WEFT_ASSIGN_OR_RETURN(std::string name, read_string(j, path));
  auto v = graph_.find_value(name);
  if (!v) return error(path, "use of undefined value '%" + name + "'");
  return *v;
}

Status Reader::read_input(const Json& j, const std::string& path) {
  WEFT_RETURN_IF_ERROR(check_object(j, path, {"name", "kind", "type"}, {"loc"}));
  WEFT_ASSIGN_OR_RETURN(std::string name, read_new_name(j["name"], path + ".name"));
  WEFT_ASSIGN_OR_RETURN(std::string kind_name, read_string(j["kind"], path + ".kind"));
  auto kind = parse_input_kind(kind_name);
  if (!kind) {
    return error(path + ".kind",
                 "unknown input kind '" + kind_name + "'; expected 'data', 'param' or 'state'");
  }
  WEFT_ASSIGN_OR_RETURN(Type type, read_type(j["type"], path + ".type"));
  WEFT_ASSIGN_OR_RETURN(Location loc, read_location(j, path));
  graph_.add_input(std::move(name), std::move(type), *kind, std::move(loc));
  return Status::ok_status();
}

Status Reader::read_node(const Json& j, const std::string& path) {
  WEFT_RETURN_IF_ERROR(
      check_object(j, path, {"op", "operands", "results"}, {"attrs", "loc", "body"}));
  WEFT_ASSIGN_OR_RETURN(std::string op_text, read_string(j["op"], path + ".op"));
  auto op = parse_op(op_text);
  if (!op) return error(path + ".op", unknown_op_message(op_text));
  const OpInfo& info = op_info(*op);

  const Json& operand_list = j["operands"];
  WEFT_RETURN_IF_ERROR(check_array(operand_list, path + ".operands"));
  std::vector<ValueId> operands;
  for (size_t i = 0; i < operand_list.size(); ++i) {
    WEFT_ASSIGN_OR_RETURN(ValueId v, read_use(operand_list[i], at_index(path + ".operands", i)));
    operands.push_back(v);
  }
  if (auto message = check_operand_count(info, operands.size())) {
    return error(path + ".operands", *message);
  }

  const Json& result_list = j["results"];
  WEFT_RETURN_IF_ERROR(check_array(result_list, path + ".results"));
  if (auto message = check_result_count(info, result_list.size())) {
    return error(path + ".results", *message);
  }
  const bool several = has_several_results(*op) && result_list.size() > 1;  // one per body output
  if (result_list.size() != static_cast<size_t>(info.results) && !several) {
    return error(path + ".results", "'" + std::string(info.name) + "' has " +
                                        std::to_string(info.results) + " result(s), but " +
                                        std::to_string(result_list.size()) + " were given");
  }
  std::vector<std::string> result_names;
  std::vector<std::optional<Type>> result_types;
  for (size_t k = 0; k < result_list.size(); ++k) {
    std::string result_path = at_index(path + ".results", k);
    const Json& r = result_list[k];
    WEFT_RETURN_IF_ERROR(check_object(r, result_path, {"name"}, {"type"}));
    WEFT_ASSIGN_OR_RETURN(std::string name, read_new_name(r["name"], result_path + ".name"));
    for (const std::string& earlier : result_names) {
      if (earlier == name) return error(result_path + ".name", "'" + name + "' is defined twice");
    }
    result_names.push_back(std::move(name));
    result_types.emplace_back();
    if (r.contains("type")) {
      WEFT_ASSIGN_OR_RETURN(result_types.back(), read_type(r["type"], result_path + ".type"));
    }
  }

  Attrs attrs;
  if (j.contains("attrs")) {
    const Json& attr_map = j["attrs"];
    if (!attr_map.is_object()) return wrong_type(path + ".attrs", "an object", attr_map);
    for (const auto& [name, value] : attr_map.items()) {
      std::string attr_path = path + ".attrs." + name;
      if (auto message = check_attribute_name(info, name)) return error(attr_path, *message);
      WEFT_ASSIGN_OR_RETURN(Attribute a, read_attribute(value, attr_path));
      if (auto message = check_attribute(info, name, a)) return error(attr_path, *message);
      attrs.emplace(name, std::move(a));
    }
  }
  if (auto message = check_required_attributes(info, attrs)) return error(path, *message);

  WEFT_ASSIGN_OR_RETURN(Location loc, read_location(j, path));
  std::shared_ptr<const Graph> body;
  if (j.contains("body") != has_body(*op)) {
    return error(path, has_body(*op) ? "'" + std::string(info.name) + "' needs a \"body\" graph"
                                     : std::string("only 'fused' and 'scan' nodes have a \"body\""));
  }
  if (j.contains("body")) {
    // JSON nesting is capped before parsing (kMaxJsonDepth), but bodies that write few
    // levels could still pass that cap one body too deep.
    if (body_depth_ == kMaxBodyDepth) {
      return error(path, "'" + std::string(info.name) + "' bodies nested more than " +
                             std::to_string(kMaxBodyDepth) + " deep; weft reads at most " +
                             std::to_string(kMaxBodyDepth) + " levels");
    }
    StatusOr<Graph> b = Reader(filename_, body_depth_ + 1).read(j["body"]);
    if (!b.ok()) return Error{path + ".body." + b.error().message, b.error().loc};
    body = std::make_shared<const Graph>(std::move(*b));
  }
  if (body && body->outputs().size() != result_names.size()) {
    const size_t returned = body->outputs().size();
    return error(path + ".results", "the body returns " + counted(static_cast<int64_t>(returned), "value") +
                                        " but '" + std::string(info.name) + "' names " +
                                        counted(static_cast<int64_t>(result_names.size()), "result"));
  }
  graph_.add_node(*op, operands, std::move(attrs), std::move(loc),
                  result_types.empty() ? std::nullopt : result_types[0],
                  result_names.empty() ? "" : result_names[0]);
  const int index = static_cast<int>(graph_.nodes().size()) - 1;
  for (size_t k = 1; k < result_names.size(); ++k) {
    graph_.add_result(index, result_names[k], result_types[k]);
  }
  graph_.mutable_nodes().back().body = std::move(body);
  if (*op == Op::Assign) {
    if (auto message = check_assign_target(graph_, operands[0])) {
      return error(path + ".operands[0]", *message);
    }
  }
  return Status::ok_status();
}

StatusOr<Graph> Reader::read(const Json& doc) {
  WEFT_RETURN_IF_ERROR(check_object(doc, "", {"version", "name", "inputs", "nodes", "outputs"},
                                    {"declared_output_types", "loc"}));
  WEFT_ASSIGN_OR_RETURN(int64_t version, read_int(doc["version"], "version"));
  if (version != kVersion) {
    return error("version", "unsupported version " + std::to_string(version) +
                                "; this weft reads version " + std::to_string(kVersion));
  }
  WEFT_ASSIGN_OR_RETURN(std::string name, read_string(doc["name"], "name"));
  graph_.set_name(std::move(name));
  WEFT_ASSIGN_OR_RETURN(Location loc, read_location(doc, ""));
  graph_.set_loc(std::move(loc));
  for (const char* list : {"inputs", "nodes", "outputs"}) {
    WEFT_RETURN_IF_ERROR(check_array(doc[list], list));
  }
  for (size_t i = 0; i < doc["inputs"].size(); ++i) {
    WEFT_RETURN_IF_ERROR(read_input(doc["inputs"][i], at_index("inputs", i)));
  }
  for (size_t i = 0; i < doc["nodes"].size(); ++i) {
    WEFT_RETURN_IF_ERROR(read_node(doc["nodes"][i], at_index("nodes", i)));
  }
  std::vector<ValueId> outputs;
  for (size_t i = 0; i < doc["outputs"].size(); ++i) {
    WEFT_ASSIGN_OR_RETURN(ValueId v, read_use(doc["outputs"][i], at_index("outputs", i)));
    outputs.push_back(v);
  }
  graph_.set_outputs(std::move(outputs));
  if (doc.contains("declared_output_types")) {
    const Json& list = doc["declared_output_types"];
    WEFT_RETURN_IF_ERROR(check_array(list, "declared_output_types"));
    std::vector<Type> types;
    for (size_t i = 0; i < list.size(); ++i) {
      WEFT_ASSIGN_OR_RETURN(Type t, read_type(list[i], at_index("declared_output_types", i)));
      types.push_back(std::move(t));
    }
    graph_.set_declared_output_types(std::move(types));
  }
  return std::move(graph_);
}

}  // namespace

std::string graph_to_json(const Graph& g, int indent) {
  std::string out;
  if (indent < 0) {
    write_flat(graph_json(g), out, std::string::npos);
  } else {
    write_pretty(graph_json(g), indent, /*depth=*/0, /*column=*/0, out);
  }
  return out + "\n";
}

namespace {

// nlohmann's parser is iterative, but ordered_json copies values recursively when an
// object's storage grows, so deeply nested input overflows the stack. The cap is the
// deepest the writer goes for a graph whose bodies nest kMaxBodyDepth deep (ir/graph.h),
// so whatever it writes reads back: the top-level graph object is level 1; below a graph
// the writer goes at most 6 levels (nodes, a node, its results, a result, its type, the
// shape), and each body adds 3 (nodes, a node, its body).
constexpr int kJsonLevelsBelowGraph = 6;
constexpr int kJsonLevelsPerBody = 3;
constexpr int kMaxJsonDepth = 1 + kJsonLevelsPerBody * kMaxBodyDepth + kJsonLevelsBelowGraph;
static_assert(kMaxJsonDepth == 775);


}  // namespace

StatusOr<Graph> graph_from_json(std::string_view json_text, std::string_view filename) {
  if (std::optional<size_t> at = find_excess_nesting(json_text, kMaxJsonDepth)) {
    return Error{"invalid JSON: nested deeper than " + std::to_string(kMaxJsonDepth) +
                     " levels; weft reads graphs whose bodies nest at most " + std::to_string(kMaxBodyDepth) +
                     " deep",
                 location_of_byte(json_text, *at, filename)};
  }
  if (std::optional<size_t> at = find_duplicate_json_key(json_text)) {
    size_t end = *at + 1;  // the key's closing quote
    while (end < json_text.size() && json_text[end] != '"') end += json_text[end] == '\\' ? 2 : 1;
    return Error{"invalid JSON: the key " + std::string(json_text.substr(*at, end + 1 - *at)) +
                     " appears twice in one object; remove one (JSON readers keep either)",
                 location_of_byte(json_text, *at, filename)};
  }
  Json doc;
  try {
    doc = Json::parse(json_text.begin(), json_text.end());
  } catch (const Json::parse_error& e) {
    // nlohmann's message reads "[json.exception.parse_error.101] parse error at line 1,
    // column 5: ..."; the location goes into Error.loc, the rest into the message.
    std::string what = e.what();
    size_t colon = what.find(": ");
    std::string detail = colon == std::string::npos ? what : what.substr(colon + 2);
    size_t offset = e.byte == 0 ? 0 : e.byte - 1;
    return Error{"invalid JSON: " + detail, location_of_byte(json_text, offset, filename)};
  } catch (const Json::exception& e) {
    // A number too large for a double (`1e400`) is out_of_range.406, which carries no
    // position.
    std::string what = e.what();
    size_t bracket = what.find("] ");
    return Error{"invalid JSON: " + (bracket == std::string::npos ? what : what.substr(bracket + 2)),
                 Location{std::string(filename), 0, 0, ""}};
  }
  try {
    return Reader(filename).read(doc);
  } catch (const Json::exception& e) {
    // Every access above is checked first; this is a last line of defence.
    return Error{std::string("invalid graph JSON: ") + e.what(),
                 Location{std::string(filename), 0, 0, ""}};
  }
}

}  // namespace weft
