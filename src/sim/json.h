// A minimal JSON writer for reports: objects, arrays, strings, integers and fixed-precision
// numbers, written in the order given, so the same report gives the same bytes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gpupool {

class JsonWriter {
 public:
  JsonWriter& BeginObject();
  JsonWriter& EndObject();
  JsonWriter& BeginArray();
  JsonWriter& EndArray();
  JsonWriter& Key(const std::string& k);
  JsonWriter& String(const std::string& v);
  JsonWriter& Int(int64_t v);
  JsonWriter& Number(double v, int decimals = 4);  // non-finite numbers become null
  JsonWriter& Bool(bool v);
  const std::string& str() const { return out_; }

 private:
  void Comma();
  void Quote(const std::string& v);
  std::string out_;
  std::vector<bool> first_;  // per open container: no element yet
  bool after_key_ = false;
};

}  // namespace gpupool
