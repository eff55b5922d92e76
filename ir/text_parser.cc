// The `.wir` parser: recursive descent over the tokens of text_lexer.h, one method per
// grammar rule of ir/text.h. Every error is a user error at the offending token.
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cmath>
#include <cstdlib>
#include <unordered_map>

#include "ir/schema_check.h"
#include "ir/text.h"
#include "ir/text_lexer.h"
#include "ir/text_util.h"

namespace weft {
namespace {

// Parses a number token: an int unless it has a `.`, an exponent, or is inf/nan.
std::optional<Attribute> number_value(const std::string& text) {
  std::string_view s = text;
  bool negative = !s.empty() && s.front() == '-';
  if (!s.empty() && (s.front() == '-' || s.front() == '+')) s.remove_prefix(1);
  if (s == "inf") return Attribute(negative ? -INFINITY : INFINITY);
  if (s == "nan") return Attribute(static_cast<double>(NAN));
  if (s.empty() || !(s.front() >= '0' && s.front() <= '9')) return std::nullopt;
  const char* begin = text.data() + (text.front() == '+' ? 1 : 0);
  const char* end = text.data() + text.size();
  if (s.find_first_of(".eE") == std::string_view::npos) {
    int64_t v = 0;
    auto [ptr, ec] = std::from_chars(begin, end, v);
    if (ec != std::errc() || ptr != end) return std::nullopt;
    return Attribute(v);
  }
  double v = 0;
  auto [ptr, ec] = std::from_chars(begin, end, v);
  if (ptr != end) return std::nullopt;
  if (ec == std::errc::result_out_of_range) {
    // Subnormals such as 5e-324 are out of range for from_chars but exact for strtod.
    v = std::strtod(std::string(begin, end).c_str(), nullptr);
    if (!std::isfinite(v)) return std::nullopt;
  } else if (ec != std::errc()) {
    return std::nullopt;
  }
  return Attribute(v);
}

std::string all_dtype_names() {
  std::string out;
  for (DType d : kAllDTypes) out += (out.empty() ? "" : ", ") + std::string(dtype_name(d));
  return out;
}

class Parser {
 public:
  Parser(std::string_view text, std::string_view filename)
      : lexer_(text), filename_(filename) {
    tok_ = lexer_.next();
  }

  StatusOr<Graph> parse();

 private:
  Location loc_of(const Token& t) const { return Location{filename_, t.line, t.col, ""}; }
  Error error_at(const Token& t, std::string message) const {
    return Error{std::move(message), loc_of(t)};
  }
  /// The current token is not what the grammar wants here: "expected X, found Y".
  Error unexpected(const std::string& expected) const;
  Token take() {
    Token t = std::move(tok_);
    tok_ = lexer_.next();
    return t;
  }
  bool at(TokenKind kind) const { return tok_.kind == kind; }
  bool at_word(std::string_view word) const { return at(TokenKind::Ident) && tok_.text == word; }
  StatusOr<Token> expect(TokenKind kind, const std::string& expected);
  /// After a ',' in a list closed by `closer`: a trailing comma is an error.
  Status no_trailing_comma(const Token& comma, TokenKind closer, std::string_view list);

  Status parse_header();
  Status parse_input();
  StatusOr<Type> parse_type();
  /// A statement's operands, and the token of the first (where an assign's error points).
  struct Operands {
    std::vector<ValueId> values;
    std::optional<Token> first;
  };
  Status parse_statement();
  /// The steps of a statement, in order: its result names, its op's name (checked against
  /// them), its operands, its result types and its body.
  StatusOr<std::vector<Token>> parse_results();
  StatusOr<Token> parse_op_name(const std::vector<Token>& results);
  StatusOr<Operands> parse_operands(const std::string& op_quoted);
  StatusOr<std::vector<std::optional<Type>>> parse_result_types(const std::vector<Token>& results,
                                                                const std::string& op_quoted);
  StatusOr<std::shared_ptr<const Graph>> parse_body(Op op, const std::string& op_quoted);
  Status parse_return();
  StatusOr<std::shared_ptr<const Graph>> parse_region(const std::string& op_quoted);
  StatusOr<ValueId> parse_use(Token* where = nullptr);
  Status parse_attrs(const OpInfo& info, Attrs& attrs);
  StatusOr<Attribute> parse_attr_value();
  StatusOr<Attribute> parse_list();
  StatusOr<Location> parse_loc();
  /// Checks that `name` is not defined yet and remembers where it is being defined.
  Status check_new_name(const Token& name);

  Lexer lexer_;
  std::string filename_;
  Token tok_;
  Graph graph_;
  std::unordered_map<std::string, Location> defined_at_;
  std::optional<std::vector<Type>> header_types_;
  int region_depth_ = 0;  ///< 'fused' bodies open around the current statement.
};

Error Parser::unexpected(const std::string& expected) const {
  if (tok_.kind == TokenKind::Error) return error_at(tok_, tok_.text);
  if (tok_.kind == TokenKind::Eof) {
    return error_at(tok_, "unexpected end of file; expected " + expected);
  }
  return error_at(tok_, "expected " + expected + ", found " + describe(tok_));
}

StatusOr<Token> Parser::expect(TokenKind kind, const std::string& expected) {
  if (!at(kind)) return unexpected(expected);
  return take();
}

Status Parser::no_trailing_comma(const Token& comma, TokenKind closer, std::string_view list) {
  if (!at(closer)) return Status::ok_status();
  return error_at(comma, "trailing ',' in " + std::string(list) + "; remove it");
}

StatusOr<Graph> Parser::parse() {
  WEFT_RETURN_IF_ERROR(parse_header());
  while (!at_word("return")) {
    if (at(TokenKind::RBrace)) {
      return error_at(tok_, "graph @" + graph_.name() +
                                " has no 'return'; end its body with 'return %value, ...'");
    }
    WEFT_RETURN_IF_ERROR(parse_statement());
  }
  WEFT_RETURN_IF_ERROR(parse_return());
  WEFT_RETURN_IF_ERROR(expect(TokenKind::RBrace, "'}' to close graph @" + graph_.name() +
                                                     " after its 'return'"));
  if (!at(TokenKind::Eof)) {
    if (at(TokenKind::Error)) return error_at(tok_, tok_.text);
    return error_at(tok_, "unexpected " + describe(tok_) + " after the end of graph @" +
                              graph_.name() + "; a file holds exactly one graph");
  }
  // The header is kept only where it says more than the output values' types do.
  if (header_types_) {
    bool implied = header_types_->size() == graph_.outputs().size();
    for (size_t i = 0; implied && i < graph_.outputs().size(); ++i) {
      const auto& type = graph_.value(graph_.outputs()[i]).type;
      implied = type && *type == (*header_types_)[i];
    }
    if (!implied) graph_.set_declared_output_types(std::move(*header_types_));
  }
  return std::move(graph_);
}

Status Parser::parse_header() {
  if (!at_word("graph")) return unexpected("'graph' to begin a graph");
  graph_.set_loc(loc_of(take()));
  WEFT_ASSIGN_OR_RETURN(Token name, expect(TokenKind::GraphName, "a graph name such as '@main'"));
  graph_.set_name(name.text);
  WEFT_RETURN_IF_ERROR(expect(TokenKind::LParen, "'(' to begin the inputs of @" + name.text));
  if (!at(TokenKind::RParen)) {
    while (true) {
      WEFT_RETURN_IF_ERROR(parse_input());
      if (!at(TokenKind::Comma)) break;
      Token comma = take();
      WEFT_RETURN_IF_ERROR(no_trailing_comma(comma, TokenKind::RParen, "the input list"));
    }
  }
  WEFT_RETURN_IF_ERROR(expect(TokenKind::RParen, "',' or ')' after an input"));
  if (at(TokenKind::Arrow)) {
    take();
    WEFT_RETURN_IF_ERROR(expect(TokenKind::LParen, "'(' to begin the output types"));
    header_types_.emplace();
    if (!at(TokenKind::RParen)) {
      while (true) {
        WEFT_ASSIGN_OR_RETURN(Type type, parse_type());
        header_types_->push_back(std::move(type));
        if (!at(TokenKind::Comma)) break;
        Token comma = take();
        WEFT_RETURN_IF_ERROR(no_trailing_comma(comma, TokenKind::RParen, "the output types"));
      }
    }
    WEFT_RETURN_IF_ERROR(expect(TokenKind::RParen, "',' or ')' after an output type"));
  }
  WEFT_RETURN_IF_ERROR(expect(TokenKind::LBrace, "'{' to begin the body of @" + name.text));
  return Status::ok_status();
}

Status Parser::parse_input() {
  WEFT_ASSIGN_OR_RETURN(Token name, expect(TokenKind::ValueName, "an input such as '%x: f32[4]'"));
  WEFT_RETURN_IF_ERROR(check_new_name(name));
  WEFT_RETURN_IF_ERROR(expect(TokenKind::Colon, "':' and a type after input '%" + name.text + "'"));
  WEFT_ASSIGN_OR_RETURN(Type type, parse_type());
  InputKind kind = InputKind::data;
  if (at(TokenKind::LBrace)) {
    take();
    WEFT_ASSIGN_OR_RETURN(Token word, expect(TokenKind::Ident, "an input kind ('param' or 'state')"));
    auto parsed = parse_input_kind(word.text);
    if (!parsed) {
      return error_at(word, "unknown input kind '" + word.text + "'; expected 'param' or 'state'");
    }
    kind = *parsed;
    WEFT_RETURN_IF_ERROR(expect(TokenKind::RBrace, "'}' after the input kind"));
  }
  graph_.add_input(name.text, std::move(type), kind, loc_of(name));
  return Status::ok_status();
}

StatusOr<Type> Parser::parse_type() {
  WEFT_ASSIGN_OR_RETURN(Token dtype_tok, expect(TokenKind::Ident, "a type such as 'f32[4,6]'"));
  auto dtype = parse_dtype(dtype_tok.text);
  if (!dtype) {
    return error_at(dtype_tok, "unknown dtype '" + dtype_tok.text + "'; expected one of " +
                                   all_dtype_names());
  }
  WEFT_RETURN_IF_ERROR(expect(TokenKind::LBracket, "'[' and the dimensions after dtype '" +
                                                       dtype_tok.text + "' (a scalar is '" +
                                                       dtype_tok.text + "[]')"));
  Type type{*dtype, {}};
  if (!at(TokenKind::RBracket)) {
    while (true) {
      auto dim = at(TokenKind::Number) ? number_value(tok_.text) : std::nullopt;
      if (!dim || attr_kind(*dim) != AttrKind::Int || std::get<int64_t>(*dim) < 0) {
        return unexpected("a dimension size (a non-negative integer)");
      }
      take();
      type.shape.dims.push_back(std::get<int64_t>(*dim));
      if (!at(TokenKind::Comma)) break;
      Token comma = take();
      WEFT_RETURN_IF_ERROR(no_trailing_comma(comma, TokenKind::RBracket, "the dimensions"));
    }
  }
  WEFT_RETURN_IF_ERROR(expect(TokenKind::RBracket, "',' or ']' after a dimension"));
  return type;
}

Status Parser::check_new_name(const Token& name) {
  auto it = defined_at_.find(name.text);
  if (it != defined_at_.end()) {
    return error_at(name, "value '%" + name.text + "' is defined twice; first defined at " +
                              std::to_string(it->second.line) + ":" +
                              std::to_string(it->second.col));
  }
  defined_at_[name.text] = loc_of(name);
  return Status::ok_status();
}

// `%a, %b = op(%x, %y) {attrs} : types ({ body }) loc(...)`, one step per part.
Status Parser::parse_statement() {
  const Token first = tok_;
  WEFT_ASSIGN_OR_RETURN(const std::vector<Token> results, parse_results());
  WEFT_ASSIGN_OR_RETURN(const Token op_tok, parse_op_name(results));
  const Op op = *parse_op(op_tok.text);  // parse_op_name checked that it names one
  const OpInfo& info = op_info(op);
  const std::string op_quoted = "'" + std::string(info.name) + "'";
  WEFT_ASSIGN_OR_RETURN(const Operands operands, parse_operands(op_quoted));
  if (auto message = check_operand_count(info, operands.values.size())) return error_at(op_tok, *message);
  Attrs attrs;
  if (at(TokenKind::LBrace)) WEFT_RETURN_IF_ERROR(parse_attrs(info, attrs));
  if (auto message = check_required_attributes(info, attrs)) return error_at(op_tok, *message);
  WEFT_ASSIGN_OR_RETURN(std::vector<std::optional<Type>> types, parse_result_types(results, op_quoted));
  WEFT_ASSIGN_OR_RETURN(std::shared_ptr<const Graph> body, parse_body(op, op_quoted));
  Location loc = loc_of(first);
  if (at_word("loc")) {
    WEFT_ASSIGN_OR_RETURN(loc, parse_loc());
  }
  if (body && body->outputs().size() != results.size()) {
    const size_t returned = body->outputs().size();
    return error_at(results.front(), "the body returns " + counted(static_cast<int64_t>(returned), "value") +
                                         " but " + op_quoted + " names " +
                                         counted(static_cast<int64_t>(results.size()), "result"));
  }
  graph_.add_node(op, operands.values, std::move(attrs), std::move(loc), types.empty() ? std::nullopt : types[0],
                  results.empty() ? "" : results.front().text);
  const int index = static_cast<int>(graph_.nodes().size()) - 1;
  for (size_t k = 1; k < results.size(); ++k) graph_.add_result(index, results[k].text, types[k]);
  graph_.mutable_nodes().back().body = std::move(body);
  if (op == Op::Assign) {
    if (auto message = check_assign_target(graph_, operands.values[0])) return error_at(*operands.first, *message);
  }
  return Status::ok_status();
}

StatusOr<std::vector<Token>> Parser::parse_results() {
  // `%a =`, or `%a, %b =` for a node with several; none before an op without a result.
  std::vector<Token> results;
  if (!at(TokenKind::ValueName)) return results;
  results.push_back(take());
  while (at(TokenKind::Comma)) {
    take();
    WEFT_ASSIGN_OR_RETURN(Token next, expect(TokenKind::ValueName, "a result name after ','"));
    results.push_back(std::move(next));
  }
  WEFT_RETURN_IF_ERROR(expect(TokenKind::Equals, "'=' after '%" + results.back().text + "'"));
  return results;
}

StatusOr<Token> Parser::parse_op_name(const std::vector<Token>& results) {
  if (!at(TokenKind::Ident)) {
    return unexpected(!results.empty() ? std::string("an op name") : "a statement or 'return'");
  }
  Token op_tok = take();
  auto op = parse_op(op_tok.text);
  if (!op) return error_at(op_tok, unknown_op_message(op_tok.text));
  const OpInfo& info = op_info(*op);
  const std::string op_quoted = "'" + std::string(info.name) + "'";
  if (!results.empty() && info.results == 0) {
    return error_at(results[0], op_quoted + " has no result; remove '%" + results[0].text + " ='");
  }
  if (results.empty() && info.results > 0) {
    return error_at(op_tok, op_quoted + " has a result; name it: '%name = " + std::string(info.name) + "(...)'");
  }
  if (results.size() > 1 && !has_several_results(*op)) {
    return error_at(results[1], op_quoted +
                                    " has one result; only 'fused', 'scan' and "
                                    "'attention_grad' may have several");
  }
  if (auto message = check_result_count(info, results.size())) return error_at(results[0], *message);
  for (const Token& r : results) WEFT_RETURN_IF_ERROR(check_new_name(r));
  return op_tok;
}

StatusOr<Parser::Operands> Parser::parse_operands(const std::string& op_quoted) {
  WEFT_RETURN_IF_ERROR(expect(TokenKind::LParen, "'(' after " + op_quoted));
  Operands operands;
  if (!at(TokenKind::RParen)) {
    while (true) {
      Token where;
      WEFT_ASSIGN_OR_RETURN(ValueId v, parse_use(&where));
      if (!operands.first) operands.first = where;
      operands.values.push_back(v);
      if (!at(TokenKind::Comma)) break;
      Token comma = take();
      WEFT_RETURN_IF_ERROR(no_trailing_comma(comma, TokenKind::RParen, "the operands"));
    }
  }
  WEFT_RETURN_IF_ERROR(expect(TokenKind::RParen, "',' or ')' after an operand of " + op_quoted));
  return operands;
}

StatusOr<std::vector<std::optional<Type>>> Parser::parse_result_types(const std::vector<Token>& results,
                                                                     const std::string& op_quoted) {
  std::vector<std::optional<Type>> types(results.size());
  if (!at(TokenKind::Colon)) return types;
  if (results.empty()) return error_at(tok_, op_quoted + " has no result, so it takes no ': type'");
  take();
  for (size_t k = 0; k < results.size(); ++k) {
    if (k > 0) {
      WEFT_RETURN_IF_ERROR(expect(TokenKind::Comma, "',' and the type of '%" + results[k].text + "'"));
    }
    WEFT_ASSIGN_OR_RETURN(types[k], parse_type());
  }
  return types;
}

StatusOr<std::shared_ptr<const Graph>> Parser::parse_body(Op op, const std::string& op_quoted) {
  if (at(TokenKind::LParen)) {
    if (!has_body(op)) {
      return error_at(tok_, op_quoted + " takes no body; only 'fused' and 'scan' have a '({ ... })' region");
    }
    return parse_region(op_quoted);
  }
  if (has_body(op)) return unexpected("'({' to begin the body of " + op_quoted);
  return std::shared_ptr<const Graph>();
}

// `({ ^label(%arg: type, ...): statement* return %v })`: the body is parsed as a graph
// of its own (its names are its own), then the outer graph's state is restored.
StatusOr<std::shared_ptr<const Graph>> Parser::parse_region(const std::string& op_quoted) {
  // Bodies are parsed recursively; a cap keeps a hostile file from overflowing the stack
  // (the JSON reader caps body nesting at the same depth). No graph needs more than a few.
  constexpr int kMaxRegionDepth = kMaxBodyDepth;
  if (region_depth_ == kMaxRegionDepth) {
    return error_at(tok_, "the body of this " + op_quoted + " is nested more than " +
                              std::to_string(kMaxRegionDepth) + " deep; weft reads at most " +
                              std::to_string(kMaxRegionDepth) + " levels");
  }
  take();  // '('
  WEFT_RETURN_IF_ERROR(expect(TokenKind::LBrace, "'{' to begin the body of " + op_quoted));
  WEFT_ASSIGN_OR_RETURN(Token label, expect(TokenKind::BlockLabel,
                                            "a block label such as '^body(%x: f32[4]):'"));
  Graph outer = std::move(graph_);
  auto outer_defined = std::move(defined_at_);
  graph_ = Graph(label.text);
  graph_.set_loc(loc_of(label));
  defined_at_.clear();
  WEFT_RETURN_IF_ERROR(expect(TokenKind::LParen, "'(' after '^" + label.text + "'"));
  if (!at(TokenKind::RParen)) {
    while (true) {
      WEFT_RETURN_IF_ERROR(parse_input());
      if (!at(TokenKind::Comma)) break;
      Token comma = take();
      WEFT_RETURN_IF_ERROR(no_trailing_comma(comma, TokenKind::RParen, "the block arguments"));
    }
  }
  WEFT_RETURN_IF_ERROR(expect(TokenKind::RParen, "',' or ')' after a block argument"));
  WEFT_RETURN_IF_ERROR(expect(TokenKind::Colon, "':' after the block arguments"));
  while (!at_word("return")) {
    if (at(TokenKind::RBrace)) {
      return error_at(tok_, "the body of " + op_quoted +
                                " has no 'return'; end it with 'return %value'");
    }
    ++region_depth_;
    Status statement = parse_statement();
    --region_depth_;
    WEFT_RETURN_IF_ERROR(statement);
  }
  WEFT_RETURN_IF_ERROR(parse_return());
  WEFT_RETURN_IF_ERROR(expect(TokenKind::RBrace, "'}' to close the body after its 'return'"));
  WEFT_RETURN_IF_ERROR(expect(TokenKind::RParen, "')' after the body's '}'"));
  auto body = std::make_shared<const Graph>(std::move(graph_));
  graph_ = std::move(outer);
  defined_at_ = std::move(outer_defined);
  return body;
}

Status Parser::parse_return() {
  take();  // 'return'
  std::vector<ValueId> outputs;
  if (at(TokenKind::ValueName)) {
    while (true) {
      WEFT_ASSIGN_OR_RETURN(ValueId v, parse_use());
      outputs.push_back(v);
      if (!at(TokenKind::Comma)) break;
      Token comma = take();
      WEFT_RETURN_IF_ERROR(no_trailing_comma(comma, TokenKind::RBrace, "the return values"));
    }
  }
  graph_.set_outputs(std::move(outputs));
  return Status::ok_status();
}

StatusOr<ValueId> Parser::parse_use(Token* where) {
  WEFT_ASSIGN_OR_RETURN(Token name, expect(TokenKind::ValueName, "a value such as '%x'"));
  auto v = graph_.find_value(name.text);
  if (!v) return error_at(name, "use of undefined value '%" + name.text + "'");
  if (where) *where = std::move(name);
  return *v;
}

Status Parser::parse_attrs(const OpInfo& info, Attrs& attrs) {
  take();  // '{'
  if (at(TokenKind::RBrace)) {
    take();
    return Status::ok_status();
  }
  while (true) {
    WEFT_ASSIGN_OR_RETURN(Token name, expect(TokenKind::Ident, "an attribute name"));
    if (auto message = check_attribute_name(info, name.text)) return error_at(name, *message);
    WEFT_RETURN_IF_ERROR(expect(TokenKind::Equals, "'=' after attribute '" + name.text + "'"));
    Token value_tok = tok_;
    WEFT_ASSIGN_OR_RETURN(Attribute value, parse_attr_value());
    if (auto message = check_attribute(info, name.text, value)) {
      return error_at(value_tok, *message);
    }
    if (!attrs.emplace(name.text, std::move(value)).second) {
      return error_at(name, "attribute '" + name.text + "' is given twice");
    }
    if (!at(TokenKind::Comma)) break;
    Token comma = take();
    WEFT_RETURN_IF_ERROR(no_trailing_comma(comma, TokenKind::RBrace, "the attributes"));
  }
  WEFT_RETURN_IF_ERROR(expect(TokenKind::RBrace, "',' or '}' after an attribute"));
  return Status::ok_status();
}

StatusOr<Attribute> Parser::parse_attr_value() {
  const std::string expected =
      "an attribute value (a number, string, true/false, dtype or list)";
  if (at(TokenKind::String)) return Attribute(take().text);
  if (at(TokenKind::LBracket)) return parse_list();
  if (at(TokenKind::Number) || at_word("inf") || at_word("nan")) {
    auto value = number_value(tok_.text);
    if (!value) return error_at(tok_, "malformed number '" + tok_.text + "'");
    take();
    return *value;
  }
  if (at(TokenKind::Ident)) {
    if (tok_.text == "true" || tok_.text == "false") return Attribute(take().text == "true");
    if (auto dtype = parse_dtype(tok_.text)) {
      take();
      return Attribute(*dtype);
    }
  }
  return unexpected(expected);
}

StatusOr<Attribute> Parser::parse_list() {
  take();  // '['
  IntList ints;
  FloatList floats;
  bool any_float = false;
  if (!at(TokenKind::RBracket)) {
    while (true) {
      if (!at(TokenKind::Number) && !at_word("inf") && !at_word("nan")) {
        return unexpected("a number in the list");
      }
      auto value = number_value(tok_.text);
      if (!value) return error_at(tok_, "malformed number '" + tok_.text + "'");
      take();
      if (attr_kind(*value) == AttrKind::Float) {
        any_float = true;
        floats.push_back(std::get<double>(*value));
      } else {
        ints.push_back(std::get<int64_t>(*value));
        floats.push_back(static_cast<double>(ints.back()));
      }
      if (!at(TokenKind::Comma)) break;
      Token comma = take();
      WEFT_RETURN_IF_ERROR(no_trailing_comma(comma, TokenKind::RBracket, "the list"));
    }
  }
  WEFT_RETURN_IF_ERROR(expect(TokenKind::RBracket, "',' or ']' after a list element"));
  if (any_float) return Attribute(std::move(floats));
  return Attribute(std::move(ints));
}

StatusOr<Location> Parser::parse_loc() {
  take();  // 'loc'
  WEFT_RETURN_IF_ERROR(expect(TokenKind::LParen, "'(' after 'loc'"));
  Location loc;
  if (at_word("unknown")) {
    take();
  } else {
    WEFT_ASSIGN_OR_RETURN(Token file, expect(TokenKind::String,
                                             "a location such as '\"model.cc\":12:5' or 'unknown'"));
    loc.file = std::move(file.text);
    for (int* field : {&loc.line, &loc.col}) {
      WEFT_RETURN_IF_ERROR(expect(TokenKind::Colon, "':' in the location"));
      auto n = at(TokenKind::Number) ? number_value(tok_.text) : std::nullopt;
      if (!n || attr_kind(*n) != AttrKind::Int || std::get<int64_t>(*n) < 0 ||
          std::get<int64_t>(*n) > INT32_MAX) {
        return unexpected(field == &loc.line ? "a line number" : "a column number");
      }
      take();
      *field = static_cast<int>(std::get<int64_t>(*n));
    }
  }
  if (at(TokenKind::Comma)) {
    take();
    WEFT_ASSIGN_OR_RETURN(Token path, expect(TokenKind::String, "a builder path string"));
    loc.path = std::move(path.text);
  }
  WEFT_RETURN_IF_ERROR(expect(TokenKind::RParen, "')' to close the location"));
  return loc;
}

}  // namespace

StatusOr<Graph> parse_graph(std::string_view text, std::string_view filename) {
  // Editors that save "UTF-8 with BOM" start the file with U+FEFF, which is no part of
  // the graph (the JSON reader and the CSV sources skip it too); columns stay as shown.
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);
  // Names and strings become JSON strings (`weftc dump --format=json`), which must be
  // UTF-8: invalid bytes would be replaced there, and two names could become one.
  if (std::optional<size_t> at = find_invalid_utf8(text)) {
    char hex[8];
    std::snprintf(hex, sizeof(hex), "0x%02X", static_cast<unsigned char>(text[*at]));
    return Error{"invalid UTF-8 (byte " + std::string(hex) + "); a .wir file is UTF-8 text",
                 location_of_byte(text, *at, filename)};
  }
  return Parser(text, filename).parse();
}

}  // namespace weft
