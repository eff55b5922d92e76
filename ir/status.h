#pragma once
// User errors and internal invariants are kept apart (STYLE.md, "Errors"):
//  - `Error` / `Status` / `StatusOr<T>` carry a user-facing error: a message and, where
//    known, the source location it points at. Every such message has a test pinning it.
//  - `WEFT_CHECK(cond, msg)` guards weft's own invariants; a failure is a bug in weft,
//    so it prints and aborts.

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <variant>

#include "ir/location.h"

namespace weft {

/// A user-facing error: what went wrong, and where (if known).
struct Error {
  Error(std::string message_in, Location loc_in = {})  // NOLINT: implicit by design
      : message(std::move(message_in)), loc(std::move(loc_in)) {}

  std::string message;
  Location loc;

  /// `FILE:LINE:COL: error: MESSAGE`, or `error: MESSAGE` when no location is known.
  std::string to_string() const;
};

/// Success, or an `Error`.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error error) : error_(std::move(error)) {}  // NOLINT: implicit by design

  static Status ok_status() { return Status(); }
  bool ok() const { return !error_.has_value(); }
  const Error& error() const { return *error_; }
  std::string to_string() const { return ok() ? "ok" : error_->to_string(); }

 private:
  std::optional<Error> error_;
};

/// A value of type T, or an `Error`.
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(T value) : data_(std::move(value)) {}      // NOLINT: implicit by design
  StatusOr(Error error) : data_(std::move(error)) {}  // NOLINT
  StatusOr(Status status) : data_(status.error()) {}  // NOLINT: only for failed statuses

  bool ok() const { return data_.index() == 0; }
  const Error& error() const { return std::get<1>(data_); }
  Status status() const { return ok() ? Status() : Status(error()); }
  T& value() & { return std::get<0>(data_); }
  const T& value() const& { return std::get<0>(data_); }
  T&& value() && { return std::get<0>(std::move(data_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, Error> data_;
};

[[noreturn]] void internal_check_failed(const char* file, int line, const char* cond,
                                        const std::string& message);

}  // namespace weft

/// Internal invariant: failure is a bug in weft, not in the user's input.
#define WEFT_CHECK(cond, message)                                         \
  do {                                                                    \
    if (!(cond)) ::weft::internal_check_failed(__FILE__, __LINE__, #cond, \
                                               std::string(message));     \
  } while (0)

/// Propagates a failed Status (or StatusOr) from the enclosing function.
#define WEFT_RETURN_IF_ERROR(expr)              \
  do {                                          \
    auto weft_status_ = (expr);                 \
    if (!weft_status_.ok()) return weft_status_.error(); \
  } while (0)

#define WEFT_CONCAT_INNER_(a, b) a##b
#define WEFT_CONCAT_(a, b) WEFT_CONCAT_INNER_(a, b)
/// `WEFT_ASSIGN_OR_RETURN(auto x, f());` unwraps a StatusOr or returns its error.
#define WEFT_ASSIGN_OR_RETURN(lhs, expr) \
  WEFT_ASSIGN_OR_RETURN_IMPL_(WEFT_CONCAT_(weft_or_, __LINE__), lhs, expr)
#define WEFT_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                \
  if (!tmp.ok()) return tmp.error();                \
  lhs = std::move(tmp).value()
