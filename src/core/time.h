// Time as a value. The core never reads a clock: `Time now` comes in as a parameter
// (STYLE.md habit 7). Resolution is one millisecond since the Unix epoch.
#pragma once

#include <compare>
#include <cstdint>
#include <limits>
#include <string>

namespace gpupool {

class Duration {
 public:
  constexpr Duration() = default;
  static constexpr Duration Millis(int64_t ms) { return Duration(ms); }
  static constexpr Duration Seconds(int64_t s) { return Duration(s * 1000); }
  static constexpr Duration Minutes(int64_t m) { return Duration(m * 60'000); }
  static constexpr Duration Hours(int64_t h) { return Duration(h * 3'600'000); }
  static constexpr Duration Infinite() { return Duration(std::numeric_limits<int64_t>::max()); }

  constexpr int64_t millis() const { return ms_; }
  constexpr int64_t seconds() const { return ms_ / 1000; }
  constexpr bool is_infinite() const { return ms_ == std::numeric_limits<int64_t>::max(); }
  friend constexpr auto operator<=>(Duration, Duration) = default;
  friend constexpr Duration operator+(Duration a, Duration b) { return Duration(a.ms_ + b.ms_); }
  friend constexpr Duration operator-(Duration a, Duration b) { return Duration(a.ms_ - b.ms_); }

 private:
  constexpr explicit Duration(int64_t ms) : ms_(ms) {}
  int64_t ms_ = 0;
};

class Time {
 public:
  constexpr Time() = default;
  static constexpr Time FromMillis(int64_t ms) { return Time(ms); }
  static constexpr Time FromSeconds(int64_t s) { return Time(s * 1000); }
  static constexpr Time Never() { return Time(std::numeric_limits<int64_t>::max()); }

  constexpr int64_t millis() const { return ms_; }
  constexpr int64_t seconds() const { return ms_ / 1000; }
  constexpr bool is_never() const { return ms_ == std::numeric_limits<int64_t>::max(); }
  friend constexpr auto operator<=>(Time, Time) = default;
  // Saturates: anything plus an infinite duration is Never().
  friend constexpr Time operator+(Time t, Duration d) {
    if (t.is_never() || d.is_infinite()) return Never();
    return Time(t.ms_ + d.millis());
  }
  friend constexpr Duration operator-(Time a, Time b) { return Duration::Millis(a.ms_ - b.ms_); }
  friend constexpr Time operator-(Time t, Duration d) { return Time(t.ms_ - d.millis()); }

 private:
  constexpr explicit Time(int64_t ms) : ms_(ms) {}
  int64_t ms_ = 0;
};

// "t=123.456s" style rendering for reasons and logs; "never" for Time::Never().
std::string ToString(Time t);
std::string ToString(Duration d);

}  // namespace gpupool
