// Fatal checks for broken invariants: GP_CHECK(cond) << "context";
// A failed check prints the condition, the place and the message, then aborts. Use Result for
// anything the input can cause; use a check for what the code itself must guarantee.
#pragma once

#include <sstream>

namespace gpupool::internal {

class CheckFailure {
 public:
  CheckFailure(const char* cond, const char* file, int line);
  [[noreturn]] ~CheckFailure();
  template <class T>
  CheckFailure& operator<<(const T& v) {
    out_ << v;
    return *this;
  }

 private:
  std::ostringstream out_;
};

// Lets a `GP_CHECK(...) << x` expression have type void in both branches.
struct Voidify {
  void operator&(const CheckFailure&) {}
};

}  // namespace gpupool::internal

#define GP_CHECK(cond)                                  \
  (cond) ? (void)0                                      \
         : ::gpupool::internal::Voidify() &             \
               ::gpupool::internal::CheckFailure(#cond, __FILE__, __LINE__)
