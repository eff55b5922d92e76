#pragma once
// The files weftc's subcommands read, their errors naming each path as the user wrote it
// (relative paths resolved against $BUILD_WORKING_DIRECTORY): graphs (.wir text or JSON)
// and safetensors files of input values (`--params`).

#include <string>

#include "formats/safetensors.h"
#include "ir/graph.h"
#include "ir/status.h"

namespace weft::cli {

/// formats/file_io.h's read_file (out of memory reported as such).
StatusOr<std::string> read_file(const std::string& shown_path);

/// Reads and parses FILE: JSON when it ends in .json, `.wir` text otherwise.
StatusOr<Graph> load_graph(const std::string& shown_path);

/// Parses, verifies and infers types: what every command needs first.
StatusOr<Graph> load_typed_graph(const std::string& shown_path);

/// The safetensors file of `--params=FILE`.
StatusOr<SafetensorsFile> read_params(const std::string& shown_path);

}  // namespace weft::cli
