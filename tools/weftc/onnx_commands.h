#pragma once
// `weftc import`: an ONNX model as a weft graph (interop/onnx/importer.h) with its
// parameter values in a safetensors file beside it; `weftc export`: the way back
// (interop/onnx/exporter.h).

#include <string>
#include <vector>

#include "ir/status.h"

namespace weft::cli {

/// Runs `weftc import ARGV...` (see kImportHelp in help.h).
Status import_command(const std::vector<std::string>& argv);

/// Runs `weftc export ARGV...` (see kExportHelp in help.h).
Status export_command(const std::vector<std::string>& argv);

}  // namespace weft::cli
