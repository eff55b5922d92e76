#pragma once
// The `.wir` text form of a graph: a printer and a parser that round-trip.
//
//   # comment
//   graph @mlp(%x: f32[4,6], %w1: f32[6,5] {param}, %b1: f32[5] {param}) -> (f32[4,5]) {
//     %h = matmul(%x, %w1)
//     %hb = add(%h, %b1) : f32[4,5]
//     %p = softmax(%hb) {axis=1} loc("model.cc":12:5, "encoder > Linear(6->5)")
//     assign(%w1, %w1_new)
//     return %p
//   }
//
// Grammar (whitespace, newlines and `#` comments may appear between any two tokens):
//
//   file       := graph EOF                      (one graph per file for now)
//   graph      := 'graph' GRAPH '(' [input (',' input)*] ')' ['->' '(' types ')']
//                 '{' statement* 'return' [VALUE (',' VALUE)*] '}'
//   input      := VALUE ':' type ['{' ('param' | 'state' | 'data') '}']
//   statement  := [VALUE '='] OP '(' [VALUE (',' VALUE)*] ')' [attrs] [':' type] [loc]
//   attrs      := '{' [NAME '=' attr (',' NAME '=' attr)*] '}'
//   attr       := num | STRING | 'true' | 'false' | DTYPE | '[' [num (',' num)*] ']'
//   num        := INT | FLOAT
//   type       := DTYPE '[' [INT (',' INT)*] ']'  (`f32[]` is a scalar)
//   loc        := 'loc' '(' (STRING ':' INT ':' INT | 'unknown') [',' STRING] ')'
//
// - VALUE is `%name` and GRAPH is `@name`, where a name is letters, digits, `_` and `.`
//   (`%h`, `%0`, `%w1_new`, `%enc.w`); other names are written quoted: `%"a b"`. Names
//   are kept as written.
// - A statement has `%name =` exactly when its op has a result (`OpInfo::results`);
//   `assign(%target, %value)` has none. Ops without operands are written `full()`.
// - Attribute names and kinds come from the op's schema in ops.def; an integer is
//   accepted where a float is expected. FLOAT is `2.0`, `1e-05`, `-0.5`, `inf`, `-inf` or
//   `nan`; a list with any float element is a float list, `[]` an int list. Strings use
//   the escapes `\"`, `\\` and `\n`. Trailing commas are errors.
// - The `-> (types)` header is optional. Parsed, it is stored as the graph's declared
//   output types unless it says exactly what the output values' known types say.
//   Printed, it shows the declared output types if there are any, else the output values'
//   types if all are known, and is left out otherwise.
// - `loc(...)` gives the node's location (the string after the comma is the builder path,
//   `Location::path`); `loc(unknown)` is a node with no location. A statement without
//   `loc(...)` gets the location of its own first token in the parsed file. Graph inputs
//   get the location of their `%name` token; the printer does not print input locations
//   (the JSON form keeps them).
//
// Ops with a body (`fused`, `scan`) write it as a parenthesized region after the type and
// before the location: a `{ ... }` block whose arguments are named by a
// `^label(%arg: type, ...):` line and which ends with `return`. A loop (`scan`, ir/ops.def)
// with a const %w, a carry %h0 and one per-iteration output:
//
//   %h, %hs = scan(%w, %h0) {length=10, carries=1, consts=1} : f32[4], f32[10,4] ({
//     ^body(%w1: f32[4], %h1: f32[4]):
//       %h2 = mul(%h1, %w1) : f32[4]
//       return %h2, %h2
//   }) loc("model.cc":40:3)
//
// A fused kernel (passes/fuse_elementwise.h) has its body graph as its region, whose block arguments
// are the body's inputs:
//
//   %k = fused(%h, %b) : f32[4,5] ({
//     ^body(%a: f32[4,5], %c: f32[5]):
//       %0 = add(%a, %c) : f32[4,5]
//       %1 = relu(%0) : f32[4,5]
//       return %1
//   })

#include <string>
#include <string_view>

#include "ir/graph.h"
#include "ir/status.h"

namespace weft {

struct PrintOptions {
  bool locations = true;  ///< false: omit `loc(...)` (golden tests).
  /// true: print values by position instead of by name — the K-th graph input as `%inK`,
  /// the N-th node result as `%N`, numbered afresh in each body — so graphs that differ
  /// only in value names print alike (Model's per-subgraph structural hash).
  bool renumber = false;
};

/// The graph in `.wir` text, ending in a newline. Types are printed wherever known; a
/// value not yet inferred prints without `: type`.
std::string print_graph(const Graph& g, const PrintOptions& options = {});

/// Parses one graph. Errors carry Error.loc = {filename, line, col} of the offending token.
StatusOr<Graph> parse_graph(std::string_view text, std::string_view filename);

/// Reads the `.wir` file at `path` and parses it (errors name the file); an unreadable
/// file is "cannot read 'PATH': REASON".
StatusOr<Graph> read_graph_file(const std::string& path);

}  // namespace weft
