// Field readers and the GPU codec shared by the agent protocol's codecs
// (agent_protocol_register.cc, agent_protocol_heartbeat.cc, agent_protocol_reply.cc), on top of
// decode_fields.h. Internal to src/api.
#pragma once

#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "api/agent_protocol.h"
#include "api/decode_fields.h"

namespace gpupool::decode_internal {

// Log tails and acceptance output may be binary: never let dump() throw.
inline std::string DumpAny(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

// A reply body: blank reads as {} (an agent took an empty 2xx body as one before these types).
inline Result<Json> ParseReplyObject(std::string_view body) {
  if (body.find_first_not_of(" \t\r\n") == std::string_view::npos) return Json::object();
  Json j = Json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return InvalidArgument("the reply is not valid JSON");
  if (!j.is_object()) return InvalidArgument("the reply must be a JSON object");
  return j;
}

// `key` of `j` if present: absent is nullopt, another type an error naming where + key.
inline Result<std::optional<int64_t>> OptInt(const Json& j, const char* key, int64_t lo, int64_t hi,
                                             const std::string& where) {
  if (!j.contains(key)) return std::optional<int64_t>();
  Result<int64_t> v = Int(j, key, lo, hi, where);
  if (!v.ok()) return v.error();
  return std::optional<int64_t>(*v);
}

inline Result<std::optional<std::string>> OptStr(const Json& j, const char* key, const std::string& where) {
  auto it = j.find(key);
  if (it == j.end()) return std::optional<std::string>();
  if (!it->is_string()) return InvalidArgument("'" + where + key + "' must be a string");
  return std::optional<std::string>(it->get<std::string>());
}

inline Result<std::optional<bool>> OptBool(const Json& j, const char* key, const std::string& where) {
  if (!j.contains(key)) return std::optional<bool>();
  Result<bool> v = Bool(j, key, where);
  if (!v.ok()) return v.error();
  return std::optional<bool>(*v);
}

// A non-negative integer value; a negative one reads as 0.
inline Result<std::optional<uint64_t>> OptUint(const Json& j, const char* key, const std::string& where) {
  auto it = j.find(key);
  if (it == j.end()) return std::optional<uint64_t>();
  if (!it->is_number_integer()) return InvalidArgument("'" + where + key + "' must be an integer");
  if (it->is_number_unsigned()) return std::optional<uint64_t>(it->get<uint64_t>());
  return std::optional<uint64_t>(it->get<int64_t>() < 0 ? 0 : static_cast<uint64_t>(it->get<int64_t>()));
}

// Seconds as a number >= 0 (fractions kept to the ms, at most 10 years); a negative number
// reads as absent (the receiver's default).
inline Result<std::optional<Duration>> OptSeconds(const Json& j, const char* key, const std::string& where) {
  auto it = j.find(key);
  if (it == j.end()) return std::optional<Duration>();
  if (!it->is_number()) return InvalidArgument("'" + where + key + "' must be a number of seconds");
  const double s = it->get<double>();
  if (!(s >= 0)) return std::optional<Duration>();
  const double ms = std::min(s, 10.0 * 366 * 86400) * 1000;
  return std::optional<Duration>(Duration::Millis(static_cast<int64_t>(ms)));
}

// Milliseconds in a reply ("lease_ms", "heartbeat_interval_ms"): a number; one <= 0 reads as
// absent (the agent keeps what it had), one above 2^40 as 2^40.
inline Result<std::optional<int64_t>> PositiveMillis(const Json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end()) return std::optional<int64_t>();
  if (!it->is_number()) return InvalidArgument(std::string("'") + key + "' must be a number of milliseconds");
  const double ms = it->get<double>();
  if (!(ms > 0)) return std::optional<int64_t>();
  return std::optional<int64_t>(static_cast<int64_t>(std::min(ms, static_cast<double>(int64_t{1} << 40))));
}

// An optional positive integer (an epoch); absent, or not positive, reads as none.
inline Result<std::optional<int64_t>> PositiveInteger(const Json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end()) return std::optional<int64_t>();
  if (!it->is_number_integer()) return InvalidArgument(std::string("'") + key + "' must be an integer");
  const int64_t v = it->is_number_unsigned() ? static_cast<int64_t>(std::min<uint64_t>(it->get<uint64_t>(), INT64_MAX))
                                             : it->get<int64_t>();
  if (v <= 0) return std::optional<int64_t>();
  return std::optional<int64_t>(v);
}

// Seconds as the daemon sends them: an integer when whole.
inline Json SecondsJson(Duration d) {
  if (d.millis() % 1000 == 0) return d.millis() / 1000;
  return static_cast<double>(d.millis()) / 1000;
}

// The list `key` of `j`: null when absent, an error when it is not a list.
inline Result<const Json*> OptList(const Json& j, const char* key, const std::string& where = "") {
  auto it = j.find(key);
  if (it == j.end()) return static_cast<const Json*>(nullptr);
  if (!it->is_array()) return InvalidArgument("'" + where + key + "' must be a list");
  return &*it;
}

// A list of strings (`what` says what they are, for the message).
inline Result<std::optional<std::vector<std::string>>> OptStrings(const Json& j, const char* key, const char* what) {
  auto it = j.find(key);
  if (it == j.end()) return std::optional<std::vector<std::string>>();
  if (!it->is_array()) return InvalidArgument(std::string("'") + key + "' must be a list of " + what);
  std::vector<std::string> out;
  for (const Json& e : *it) {
    if (!e.is_string()) return InvalidArgument(std::string("'") + key + "' must be a list of " + what);
    out.push_back(e.get<std::string>());
  }
  return std::optional<std::vector<std::string>>(std::move(out));
}

// The index prefix of a list entry: "replicas[2].".
inline std::string At(const char* list, size_t i) { return std::string(list) + "[" + std::to_string(i) + "]."; }

// Every entry of the list `key` through `read(entry, index)` into `out`. `skipped` null: strict,
// an entry's error is the body's. Non-null: advisory, a bad entry is dropped and its reason
// said there; with `lenient_list` a field that is not a list is said there too, and read as empty.
template <typename T, typename Read>
Status ReadList(const Json& j, const char* key, Read read, std::vector<T>& out, std::vector<std::string>* skipped,
                bool lenient_list = false) {
  Result<const Json*> list = OptList(j, key);
  if (!list.ok()) {
    if (!lenient_list || skipped == nullptr) return list.error();
    skipped->push_back(list.error().message);
    return Ok();
  }
  for (size_t i = 0; *list != nullptr && i < (*list)->size(); ++i) {
    Result<T> v = read((**list)[i], i);
    if (v.ok()) {
      out.push_back(std::move(*v));
    } else if (skipped != nullptr) {
      skipped->push_back(v.error().message);
    } else {
      return v.error();
    }
  }
  return Ok();
}

// An entry that must be an object: the message for one that is not ("'logs[2]' must be an object").
inline Status IsObject(const Json& j, const std::string& where) {
  if (j.is_object()) return Ok();
  return InvalidArgument("'" + where.substr(0, where.size() - 1) + "' must be an object");
}

// GpuReport, both ways (agent_protocol_register.cc). `index_required`: a heartbeat's GPU must
// say its index; a registration's defaults to its position `i`. `uuid_required`: a
// registration's GPU must carry its UUID.
Json GpuToJson(const GpuReport& g);
Result<GpuReport> GpuFromJson(const Json& g, size_t i, bool index_required, bool uuid_required);

}  // namespace gpupool::decode_internal
