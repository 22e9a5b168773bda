#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/check.h"
#include "core/quantity.h"
#include "core/result.h"
#include "core/time.h"

namespace gpupool {

namespace internal {

CheckFailure::CheckFailure(const char* cond, const char* file, int line) {
  out_ << file << ":" << line << ": check failed: " << cond << " ";
}

CheckFailure::~CheckFailure() {
  std::fprintf(stderr, "%s\n", out_.str().c_str());
  std::fflush(stderr);
  std::abort();
}

}  // namespace internal

namespace {

// Fixed-point rendering with up to three decimals, trailing zeros dropped.
std::string Decimal(int64_t numerator, int64_t denominator) {
  const bool negative = numerator < 0;
  if (negative) numerator = -numerator;
  // Round half up to thousandths.
  const int64_t thousandths = (numerator * 1000 + denominator / 2) / denominator;
  std::string s = std::to_string(thousandths / 1000);
  int64_t frac = thousandths % 1000;
  if (frac != 0) {
    std::string f = std::to_string(frac);
    f.insert(0, 3 - f.size(), '0');
    while (!f.empty() && f.back() == '0') f.pop_back();
    s += "." + f;
  }
  return negative ? "-" + s : s;
}

}  // namespace

std::string ToString(GpuEq q) { return Decimal(q.units(), GpuEq::kUnitsPerGpu); }

std::string ToString(Time t) {
  if (t.is_never()) return "never";
  return "t=" + Decimal(t.millis(), 1000) + "s";
}

std::string ToString(Duration d) {
  if (d.is_infinite()) return "unbounded";
  return Decimal(d.millis(), 1000) + "s";
}

std::string_view ErrorCodeName(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument: return "invalid_argument";
    case ErrorCode::kNotFound: return "not_found";
    case ErrorCode::kAlreadyExists: return "already_exists";
    case ErrorCode::kFailedPrecondition: return "failed_precondition";
    case ErrorCode::kConflict: return "conflict";
    case ErrorCode::kPermissionDenied: return "permission_denied";
    case ErrorCode::kUnauthenticated: return "unauthenticated";
    case ErrorCode::kResourceExhausted: return "resource_exhausted";
    case ErrorCode::kUnavailable: return "unavailable";
    case ErrorCode::kInternal: return "internal";
  }
  return "unknown";
}

}  // namespace gpupool
