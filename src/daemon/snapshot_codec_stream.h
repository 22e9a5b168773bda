// Readers and writers for the snapshot codecs: snapshot_codec.cc and snapshot_codec_records.h
// include it, nothing else should.
//
// Two shapes of JSON. Configuration-sized parts (tenants, nodes, reservations) are objects and
// short rows, read with Field, Array, Int, Str, .... The large parts (jobs, ledger intervals,
// history entries) are value streams: one flat JSON array per part, the records' fields one
// after another, a list as its length then its items. A stream is compact, and nlohmann builds
// it without an allocation per record or per number: an array per record made encoding and
// decoding several times slower. Enums in a stream are small integers;
// the document lists each enum's names in code order, and the reader maps them back by name, so
// an unknown name is refused and a reordered enum still reads right.
//
// A reader checks the JSON type and range of each value and throws Malformed when one is wrong.
// SnapshotCodec's Decode* functions catch it (and any library exception) and return a Result,
// so no exception leaves the codec. Throwing keeps the sequential readers short: a Result around
// every field would triple them.
#pragma once

#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/ids.h"
#include "core/time.h"

namespace gpupool::snapshot_stream {

using nlohmann::json;

struct Malformed {
  std::string what;
};
[[noreturn]] inline void Fail(std::string what) { throw Malformed{std::move(what)}; }

// Runs `read`; an error in it names where: what + n ("job #12: ...", "node 3: GPU 1: ...").
template <class F>
auto In(const char* what, uint64_t n, F&& read) {
  try {
    return read();
  } catch (const Malformed& e) {
    Fail(what + std::to_string(n) + ": " + e.what);
  }
}

inline const json& Field(const json& j, const char* key) {
  if (!j.is_object()) Fail("expected an object");
  auto it = j.find(key);
  if (it == j.end()) Fail(std::string("lacks '") + key + "'");
  return *it;
}

// An array of exactly n elements; of any length when n is 0.
inline const json& Array(const json& j, size_t n = 0) {
  if (!j.is_array()) Fail("expected an array");
  if (n != 0 && j.size() != n) {
    Fail("expected " + std::to_string(n) + " elements, not " + std::to_string(j.size()));
  }
  return j;
}

template <class T>
T Int(const json& j) {
  static_assert(std::is_integral_v<T>);
  using L = std::numeric_limits<T>;
  if (j.is_number_unsigned()) {
    const uint64_t v = j.get<uint64_t>();
    if (v > static_cast<uint64_t>(L::max())) Fail("integer " + std::to_string(v) + " too large");
    return static_cast<T>(v);
  }
  if (!j.is_number_integer()) Fail("expected an integer");
  // Signed storage: what parsing gives a negative number, and what a json built in memory from
  // a signed value holds, negative or not.
  const int64_t v = j.get<int64_t>();
  bool fits;
  if constexpr (L::is_signed) {
    fits = v >= static_cast<int64_t>(L::min()) && v <= static_cast<int64_t>(L::max());
  } else {
    fits = v >= 0 && static_cast<uint64_t>(v) <= static_cast<uint64_t>(L::max());
  }
  if (!fits) Fail("integer " + std::to_string(v) + " out of range");
  return static_cast<T>(v);
}

inline bool Bool(const json& j) {
  if (!j.is_boolean()) Fail("expected true or false");
  return j.get<bool>();
}

inline double Real(const json& j) {
  if (!j.is_number()) Fail("expected a number");
  return j.get<double>();
}

inline const std::string& Str(const json& j) {
  if (!j.is_string()) Fail("expected a string");
  return j.get_ref<const std::string&>();
}

inline std::vector<std::string> Strings(const json& j) {
  std::vector<std::string> out;
  out.reserve(Array(j).size());
  for (const json& s : j) out.push_back(Str(s));
  return out;
}

inline Time Ms(const json& j) { return Time::FromMillis(Int<int64_t>(j)); }

// Ids: null when invalid.
template <class Id>
json IdJson(Id id) {
  return id.valid() ? json(id.value()) : json(nullptr);
}
template <class Id>
Id IdFrom(const json& j) {
  return j.is_null() ? Id() : Id(Int<typename Id::rep>(j));
}

// One enum value by name, in the object parts.
template <class E>
json EnumJson(E e, std::string_view (*name)(E)) {
  return std::string(name(e));
}
template <class E>
E EnumFrom(const json& j, E last, std::string_view (*name)(E), const char* what) {
  for (int i = 0; i <= static_cast<int>(last); ++i) {
    if (name(E(i)) == Str(j)) return E(i);
  }
  Fail(std::string("unknown ") + what + " '" + Str(j) + "'");
}

// An enum's names in code order, for a document's "enums"; `last` is its last value.
template <class E>
json EnumNames(E last, std::string_view (*name)(E)) {
  json out = json::array();
  for (int i = 0; i <= static_cast<int>(last); ++i) out.push_back(std::string(name(E(i))));
  return out;
}

// A document's codes of one enum, mapped by name to this build's values.
template <class E>
class EnumCodes {
 public:
  EnumCodes(const json& names, E last, std::string_view (*name)(E), const char* what) {
    for (const json& n : Array(names)) {
      int i = 0;
      while (i <= static_cast<int>(last) && name(E(i)) != Str(n)) ++i;
      if (i > static_cast<int>(last)) Fail(std::string("unknown ") + what + " '" + Str(n) + "'");
      by_code_.push_back(E(i));
    }
  }
  E operator()(size_t code) const {
    if (code >= by_code_.size()) Fail("enum code " + std::to_string(code) + " has no name");
    return by_code_[code];
  }
  E operator()(const json& code) const { return (*this)(Int<size_t>(code)); }

 private:
  std::vector<E> by_code_;
};

// Appends a stream's values: numbers, strings, times (ms), ids (null when invalid) and enums
// (their values, named by EnumNames). Use it through Stream.
class StreamWriter {
 public:
  // Counting only, or writing into an array reserved to `size` values.
  static StreamWriter Counter() { return StreamWriter(true, 0); }
  static StreamWriter Sized(size_t size) { return StreamWriter(false, size); }

  template <class... T>
  void operator()(const T&... v) {
    (Put(v), ...);
  }
  // A list: its length, then `item` on each element.
  template <class C, class F>
  void List(const C& items, F&& item) {
    Put(items.size());
    for (const auto& x : items) item(x);
  }
  size_t size() const { return counting_ ? counted_ : out_.size(); }
  json Take() { return json(std::move(out_)); }

 private:
  StreamWriter(bool counting, size_t size) : counting_(counting) { out_.reserve(size); }

  template <class T>
  void Put(const T& v) {
    if (counting_) {
      ++counted_;
    } else if constexpr (std::is_enum_v<T>) {
      out_.emplace_back(static_cast<int>(v));
    } else if constexpr (std::is_same_v<T, Time>) {
      out_.emplace_back(v.millis());
    } else {
      out_.emplace_back(v);
    }
  }
  template <class Tag, class Rep>
  void Put(StrongId<Tag, Rep> id) {
    if (counting_) {
      ++counted_;
    } else {
      out_.push_back(IdJson(id));
    }
  }

  bool counting_;
  size_t counted_ = 0;
  json::array_t out_;
};

// A part as a stream: `write(w)` runs twice, once counting the values and once writing them
// into an array of that size, since growing an array of a million json values step by step
// costs more than making them.
template <class F>
json Stream(F&& write) {
  StreamWriter counter = StreamWriter::Counter();
  write(counter);
  StreamWriter w = StreamWriter::Sized(counter.size());
  write(w);
  return w.Take();
}

// Reads a stream's values in the order StreamWriter wrote them.
class StreamReader {
 public:
  explicit StreamReader(const json& stream) : a_(Array(stream)) {}

  bool done() const { return next_ == a_.size(); }
  const json& Next() {
    if (next_ == a_.size()) Fail("the stream ends early");
    return a_[next_++];
  }
  template <class T>
  T Int() {
    return snapshot_stream::Int<T>(Next());
  }
  bool Bool() { return snapshot_stream::Bool(Next()); }
  const std::string& Str() { return snapshot_stream::Str(Next()); }
  Time Ms() { return snapshot_stream::Ms(Next()); }
  template <class Id>
  Id IdOf() {
    return IdFrom<Id>(Next());
  }
  // A list's length; each element takes at least one value, so it cannot exceed what is left
  // (a corrupt length never asks for a huge allocation).
  size_t Count() {
    const size_t n = Int<size_t>();
    if (n > a_.size() - next_) Fail("a list longer than the stream");
    return n;
  }

 private:
  const json& a_;
  size_t next_ = 0;
};

}  // namespace gpupool::snapshot_stream
