#pragma once
// Writing files so that a failure loses nothing: every file weft writes (.npy outputs,
// checkpoints, IR dumps) goes through here.

#include <string>
#include <string_view>

#include "ir/status.h"

namespace weft {

/// Writes `bytes` to `path` atomically: a temporary file in the same directory (O_EXCL),
/// fsync, rename over `path`, fsync of the directory. On failure the old file is left
/// as it was and the temporary file removed; errors name `path`.
Status write_file_atomically(const std::string& path, std::string_view bytes);

}  // namespace weft
