#pragma once
// Reading whole files, and writing files so that a failure loses nothing: every file weft
// writes (.npy outputs, checkpoints, IR dumps) goes through here.

#include <cstdint>
#include <string>
#include <string_view>

#include "ir/status.h"

namespace weft {

/// Writes `bytes` to `path` atomically: a temporary file in the same directory (O_EXCL),
/// fsync, rename over `path`, fsync of the directory. On failure the old file is left
/// as it was and the temporary file removed; errors name `path`. A file-size limit
/// (`ulimit -f`) is such a failure: linking this file makes SIGXFSZ ignored.
Status write_file_atomically(const std::string& path, std::string_view bytes);

/// A file open for reading: its descriptor, closed when this goes out of scope, and what
/// fstat said of it.
class ReadOnlyFile {
 public:
  /// Opens `path`; errors name it ("cannot open for reading: No such file or directory").
  static StatusOr<ReadOnlyFile> open(const std::string& path);
  ReadOnlyFile(ReadOnlyFile&& other) noexcept;
  ReadOnlyFile& operator=(ReadOnlyFile&&) = delete;
  ~ReadOnlyFile();

  int fd() const { return fd_; }
  bool is_regular() const { return regular_; }
  bool is_directory() const { return directory_; }
  /// The size of a regular file when it was opened.
  uint64_t size() const { return size_; }

 private:
  ReadOnlyFile(int fd, bool regular, bool directory, uint64_t size)
      : fd_(fd), regular_(regular), directory_(directory), size_(size) {}
  int fd_;
  bool regular_, directory_;
  uint64_t size_;
};

/// The whole of the file at `path`. Errors name `path`: it cannot be opened, it is a
/// directory, a read failed, or the memory runs out ("out of memory: reading the file
/// needs N bytes", not a truncated file nor std::bad_alloc).
StatusOr<std::string> read_file(const std::string& path);

}  // namespace weft
