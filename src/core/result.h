// Result<T>: the value or a named error, for what can go wrong (parsing, validation, storage,
// network). Broken invariants are not errors but fatal checks (check.h). No exception crosses a
// module boundary (STYLE.md habit 8).
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "core/check.h"

namespace gpupool {

enum class ErrorCode {
  kInvalidArgument,     // malformed or out-of-range input
  kNotFound,            // the named object does not exist
  kAlreadyExists,       // a create that collides
  kFailedPrecondition,  // valid input, wrong state (e.g. reconfigure a busy GPU)
  kConflict,            // lost a race or would double-book
  kPermissionDenied,
  kUnauthenticated,
  kResourceExhausted,
  kUnavailable,
  kInternal,
};

std::string_view ErrorCodeName(ErrorCode code);

struct Error {
  ErrorCode code;
  std::string message;
};

inline Error InvalidArgument(std::string m) { return {ErrorCode::kInvalidArgument, std::move(m)}; }
inline Error NotFound(std::string m) { return {ErrorCode::kNotFound, std::move(m)}; }
inline Error AlreadyExists(std::string m) { return {ErrorCode::kAlreadyExists, std::move(m)}; }
inline Error FailedPrecondition(std::string m) {
  return {ErrorCode::kFailedPrecondition, std::move(m)};
}

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Error error) : v_(std::move(error)) {}  // NOLINT

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  // REQUIRES: ok().
  T& value() & { GP_CHECK(ok()) << error().message; return std::get<0>(v_); }
  const T& value() const& { GP_CHECK(ok()) << error().message; return std::get<0>(v_); }
  T&& value() && { GP_CHECK(ok()) << error().message; return std::get<0>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  // REQUIRES: !ok().
  const Error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : error_(std::move(error)), ok_(false) {}  // NOLINT
  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const { return error_; }

 private:
  Error error_{ErrorCode::kInternal, ""};
  bool ok_ = true;
};

using Status = Result<void>;
inline Status Ok() { return Status(); }

}  // namespace gpupool

// Propagates an error from an expression returning Result<...>.
#define GP_RETURN_IF_ERROR(expr)              \
  do {                                        \
    auto gp_status_ = (expr);                 \
    if (!gp_status_.ok()) return gp_status_.error(); \
  } while (0)
