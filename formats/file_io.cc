#include "formats/file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <new>

namespace weft {
namespace {

Error file_error(const std::string& file, std::string message) {
  return Error{std::move(message), Location::of_file(file)};
}

// SIGXFSZ's default action kills the process with no message and leaves the temporary
// file behind. Ignored (in every program that writes through here), a write past the
// file-size limit (RLIMIT_FSIZE) fails with EFBIG instead, and the writer reports it,
// naming the file, and removes the temporary file.
[[maybe_unused]] const bool kFileSizeLimitIsAnError = std::signal(SIGXFSZ, SIG_IGN) != SIG_ERR;

// An empty path named no file in the error ("cannot rename .tmp.N.0 into place: No such
// file or directory ( was left as it was)", or "cannot open for reading: ...").
constexpr char kEmptyPath[] = "the file name is empty; give the path of a file";

// The directory holding `path`, for the temporary file and the directory fsync.
std::string directory_of(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

}  // namespace

Status write_file_atomically(const std::string& path, std::string_view bytes) {
  if (path.empty()) return Error{kEmptyPath};
  static std::atomic<uint64_t> counter{0};
  // Same directory, so that the rename is atomic; O_EXCL so that two writers never share
  // a temporary file.
  const std::string tmp = path + ".tmp." + std::to_string(::getpid()) + "." +
                          std::to_string(counter.fetch_add(1));
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) {
    return file_error(path, "cannot create the temporary file " + tmp + ": " + std::strerror(errno));
  }
  auto fail = [&](const std::string& what) {
    std::string err = std::strerror(errno);
    if (fd >= 0) ::close(fd);
    ::unlink(tmp.c_str());
    return file_error(path, what + ": " + err + " (" + path + " was left as it was)");
  };
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return fail("write to " + tmp + " failed");
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) return fail("fsync of " + tmp + " failed");
  if (::close(fd) != 0) {
    fd = -1;
    return fail("close of " + tmp + " failed");
  }
  fd = -1;
  if (::rename(tmp.c_str(), path.c_str()) != 0) return fail("cannot rename " + tmp + " into place");
  // Make the rename itself durable.
  int dir = ::open(directory_of(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    const bool synced = ::fsync(dir) == 0;
    const std::string err = std::strerror(errno);
    ::close(dir);
    if (!synced) return file_error(path, "fsync of the directory " + directory_of(path) + " failed: " + err);
  }
  return Status::ok_status();
}

StatusOr<ReadOnlyFile> ReadOnlyFile::open(const std::string& path) {
  if (path.empty()) return Error{kEmptyPath};
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return file_error(path, "cannot open for reading: " + std::string(std::strerror(errno)));
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    const std::string err = std::strerror(errno);
    ::close(fd);
    return file_error(path, "cannot read: " + err);
  }
  return ReadOnlyFile(fd, S_ISREG(st.st_mode), S_ISDIR(st.st_mode), static_cast<uint64_t>(st.st_size));
}

ReadOnlyFile::ReadOnlyFile(ReadOnlyFile&& other) noexcept
    : fd_(other.fd_), regular_(other.regular_), directory_(other.directory_), size_(other.size_) {
  other.fd_ = -1;
}

ReadOnlyFile::~ReadOnlyFile() {
  if (fd_ >= 0) ::close(fd_);
}

StatusOr<std::string> read_file(const std::string& path) {
  WEFT_ASSIGN_OR_RETURN(ReadOnlyFile file, ReadOnlyFile::open(path));
  if (file.is_directory()) return file_error(path, "cannot read: it is a directory, not a file");
  const int fd = file.fd();
  std::string bytes;
  auto grow = [&](size_t capacity) -> Status {
    try {
      bytes.resize(capacity);
    } catch (const std::bad_alloc&) {
      return file_error(path, "out of memory: reading the file needs " + std::to_string(capacity) + " bytes");
    }
    return Status::ok_status();
  };
  // A regular file is read into one buffer of its size; a pipe, or a file that grew,
  // into a buffer that doubles.
  WEFT_RETURN_IF_ERROR(grow(file.is_regular() ? static_cast<size_t>(file.size()) : 0));
  size_t size = 0;  // bytes read so far
  while (true) {
    char more;
    const bool full = size == bytes.size();
    const ssize_t n = full ? ::read(fd, &more, 1) : ::read(fd, bytes.data() + size, bytes.size() - size);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return file_error(path, "read failed: " + std::string(std::strerror(errno)));
    if (n == 0) break;
    if (full) {
      WEFT_RETURN_IF_ERROR(grow(std::max<size_t>(2 * size, 1 << 16)));
      bytes[size] = more;
    }
    size += static_cast<size_t>(n);
  }
  bytes.resize(size);
  return bytes;
}

}  // namespace weft
