#pragma once
// `weftc migrate`: renames the keys of a checkpoint (formats/checkpoint.h's
// migrate_checkpoint) from the command line.

#include <string>
#include <vector>

#include "ir/status.h"

namespace weft::cli {

/// Runs `weftc migrate ARGV...` (see kMigrateHelp in help.h).
Status migrate_command(const std::vector<std::string>& argv);

}  // namespace weft::cli
