// The node agent's protocol with the daemon (docs/design/agent.md, "Protocol between the agent
// and the daemon") as typed values, each with one Encode and one Decode. The daemon
// (control_plane_agents.cc, control_plane_heartbeat.cc), the agent (agent_register.cc,
// agent_heartbeat.cc) and the agent tests' fake daemon all use these, so the three cannot drift.
//
// The wire format is the one agents and daemons spoke before these types (field names, JSON
// types, which fields may be absent): an agent and a daemon of either side of the change talk.
//
// What a decoder checks: JSON syntax and types, required fields, and ranges that need no state
// (a replica index, an attempt, a MIG start slice, at most 16 GPUs). What needs the daemon's
// state (a known flavor, a GPU index below the node's GPU count, a MIG layout the model can
// hold, a job placed on this node) is the daemon's call; what needs the agent's (a GPU it has)
// the agent's. Nothing here throws; error messages name the field ("'replicas[1].attempt' must
// be an integer").
//
// Acceptance (what the daemon and the agent did before these types; numbered for the tests):
//  1. RegisterRequest: an unknown top-level field is refused; nested objects may carry more.
//  2. HeartbeatRequest: unknown fields are ignored. A malformed `replicas` or `gpus` entry
//     refuses the whole body. A malformed `logs`, `health` or `mig_errors` entry (advisory) is
//     dropped and the rest kept; why is in `skipped`.
//  3. HeartbeatReply and RegisterReply: a malformed entry of a list is dropped and the rest
//     kept, a list field that is not a list counts as empty, a `condition` or `lease_ms` of the
//     wrong type counts as absent; each is said in `skipped`, which the agent logs. A `start`
//     entry with a good job, replica and attempt but a bad other field is kept with `error`
//     set: the agent reports it as a replica that could not start (exit 127, the reason in its
//     stderr tail), as it did with a bad command.
//  4. A wrong JSON type in an optional field is an error naming the field (the daemon's 400);
//     within an advisory entry (2, 3) it drops that entry.
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "core/time.h"
#include "model/mig.h"

namespace gpupool {

// The most a log tail or the acceptance output carries (the daemon keeps the last bytes).
inline constexpr size_t kAgentLogTailBytes = 64 * 1024;
inline constexpr size_t kAgentAcceptanceBytes = 4 * 1024;
// Attempt numbers are exact in any JSON reader.
inline constexpr int64_t kMaxAgentAttempt = int64_t{1} << 53;

// ---- Shared by registration and heartbeats ----

// One GPU instance of a MIG GPU: {"start", "size", "profile", "uuid"}.
struct MigInstanceReport {
  int64_t start = 0;    // first memory slice, 0..7 (required)
  int64_t size = 0;     // slices (sent by the agent; the daemon reads the profile)
  std::string profile;  // "3g.40gb" (required)
  std::string uuid;     // its MIG UUID; "" when its compute instance is missing
  bool operator==(const MigInstanceReport&) const = default;
};

// A GPU as the agent found it: {"index", "uuid", "mig", "instances"}; `instances` only for a
// MIG GPU (and read only when "mig" is true).
struct GpuReport {
  int64_t index = 0;  // 0..15; required in a heartbeat, its position when a registration omits it
  std::string uuid;   // required in a registration (1..128 characters)
  bool mig = false;   // absent: false
  std::vector<MigInstanceReport> instances;
  bool operator==(const GpuReport&) const = default;
};

// The instances of a reported MIG GPU (the `i`th of its list) as a layout of `model`, and their
// MIG UUIDs by start slice; an error naming gpus[i] when the model cannot hold the layout.
struct ReportedMig {
  MigLayout layout;
  std::map<int, std::string> uuid;
};
Result<ReportedMig> MigOfReport(const GpuModel& model, const GpuReport& g, size_t i);

// ---- POST /v1/agents/register ----

struct AcceptanceReport {
  bool passed = true;  // required
  std::string output;  // the command's last output (the daemon keeps kAgentAcceptanceBytes)
  bool operator==(const AcceptanceReport&) const = default;
};

// {"node", "flavor", "gpus", "labels", "reported_labels", "cpu_milli", "memory_mib",
//  "acceptance"}; only the first three are required.
struct RegisterRequest {
  std::string node;             // 1..63 characters
  std::string flavor;           // a catalogue model's name (the daemon checks it)
  std::vector<GpuReport> gpus;  // 1..16
  // The node's labels when a cluster admin's registration adds it: strings (the daemon checks
  // key=value then).
  std::optional<std::vector<std::string>> labels;
  // What the agent reads of its node: at most 16 key=value labels under kAgentLabelPrefix, each
  // at most 320 characters; sorted by the decoder.
  std::optional<std::vector<std::string>> reported_labels;
  std::optional<int64_t> cpu_milli, memory_mib;  // integers (the daemon checks the range)
  std::optional<AcceptanceReport> acceptance;    // absent: no acceptance command
  bool operator==(const RegisterRequest&) const = default;
};
std::string Encode(const RegisterRequest& r);
Result<RegisterRequest> DecodeRegisterRequest(std::string_view body);

// The reply: {"node", "condition", "heartbeat_interval_ms", "heartbeat_timeout_ms", "lease_ms"}.
// Decoded leniently (acceptance 3): a missing or wrong field is absent; intervals must be > 0.
struct RegisterReply {
  std::string node;
  std::optional<std::string> condition;
  std::optional<int64_t> heartbeat_interval_ms, heartbeat_timeout_ms, lease_ms;
  // The leader's epoch, from a daemon with replicas (> 0): an agent acts on no reply of an
  // epoch older than one it has seen (a deposed leader's).
  std::optional<int64_t> epoch;
  std::vector<std::string> skipped;  // decoder: what was left out, and why; never encoded
  bool operator==(const RegisterReply&) const = default;
};
std::string Encode(const RegisterReply& r);
// A blank body reads as {}; an error only for text that is not a JSON object.
Result<RegisterReply> DecodeRegisterReply(std::string_view body);

// ---- POST /v1/agents/{node}/heartbeat ----

enum class ReplicaRunState { kRunning, kExited };

// {"job", "replica", "attempt", "state", "exit_code", "signal", "fenced"}.
struct ReplicaReport {
  std::string job;  // a job id, 1..19 decimal digits
  int64_t replica = 0;  // 0..65535
  int64_t attempt = 0;  // 0..kMaxAgentAttempt
  ReplicaRunState state = ReplicaRunState::kRunning;  // "running" | "exited"
  // Exited only. An exit code outside -1..255, or none, counts as a failure of unknown code.
  std::optional<int64_t> exit_code, signal;
  bool fenced = false;  // stopped by its shim when the lease ran out; sent only when true
  bool operator==(const ReplicaReport&) const = default;
};

// {"job", "replica", "attempt", "stdout", "stderr"}: the tails that changed.
struct LogTailReport {
  std::string job;  // as in ReplicaReport
  int64_t replica = 0, attempt = 0;
  std::optional<std::string> out, err;  // "stdout", "stderr"
  bool operator==(const LogTailReport&) const = default;
};

// {"gpu", "kind", ...}: one health event. `kind` is agent/health.h's name ("xid", "ecc",
// "row_remap_failure", "row_remap_pending", "gpu_lost", "device_lost", "temperature"); the
// daemon skips a kind it does not know. Values are non-negative integers (a negative one reads
// as 0).
struct HealthReport {
  int64_t gpu = 0;  // 0..15
  std::string kind;
  std::optional<uint64_t> code;             // xid
  std::optional<uint64_t> gpu_instance_id;  // xid on a MIG instance
  std::optional<uint64_t> count;            // ecc
  std::optional<uint64_t> celsius;          // temperature
  bool operator==(const HealthReport&) const = default;
};

// {"gpu", "layout", "error"}: a target layout the agent did not apply, and why.
struct MigRefusalReport {
  int64_t gpu = 0;  // 0..15
  std::string layout, error;
  bool operator==(const MigRefusalReport&) const = default;
};

// {"replicas", "logs", "health", "gpus", "mig_errors"}: every field a list, each may be absent.
struct HeartbeatRequest {
  std::vector<ReplicaReport> replicas;
  std::vector<LogTailReport> logs;
  std::vector<HealthReport> health;
  std::vector<GpuReport> gpus;  // the MIG GPUs as they are now
  std::vector<MigRefusalReport> mig_errors;
  std::vector<std::string> skipped;  // decoder: advisory entries dropped, and why; never encoded
  bool operator==(const HeartbeatRequest&) const = default;
};
std::string Encode(const HeartbeatRequest& r);
Result<HeartbeatRequest> DecodeHeartbeatRequest(std::string_view body);

// ---- The heartbeat's reply ----

// {"job", "replica", "attempt", "command", "tenant", "grace_s", "cpu_milli", "memory_mib",
//  "devices", "env", "mps_active_thread_percentage", "mps_pinned_memory_mib"}.
struct ReplicaStart {
  std::string job;  // a string, or a number read as its decimal text
  int64_t replica = 0, attempt = 0;  // required, >= 0
  std::vector<std::string> command;  // non-empty
  std::string tenant;                // "": the env's GPUPOOL_TENANT
  std::optional<Duration> grace;     // "grace_s", seconds >= 0 (fractions kept to the ms)
  std::optional<int64_t> cpu_milli, memory_mib;  // applied only when > 0
  std::vector<std::string> devices;  // GPU or MIG UUIDs
  std::map<std::string, std::string> env;
  std::optional<int64_t> mps_active_thread_percentage;  // 1..100
  std::optional<int64_t> mps_pinned_memory_mib;         // >= 1
  std::string error;  // decoder: why this start cannot run (acceptance 3); never encoded
  bool operator==(const ReplicaStart&) const = default;
};

// {"job", "replica", "attempt", "grace_s"}; an absent attempt matches any.
struct ReplicaStop {
  std::string job;
  int64_t replica = 0;
  std::optional<int64_t> attempt;
  std::optional<Duration> grace;  // absent (or negative): 30 s
  bool operator==(const ReplicaStop&) const = default;
};

// {"job", "replica", "attempt"}.
struct ReplicaForget {
  std::string job;
  int64_t replica = 0;
  std::optional<int64_t> attempt;
  bool operator==(const ReplicaForget&) const = default;
};

// {"gpu", "layout"}: the layout in ParseLayout's notation ("1g.10gb@0,2g.20gb@2"; "" for none).
struct MigTarget {
  int64_t gpu = 0;
  std::string layout;
  bool operator==(const MigTarget&) const = default;
};

// {"start", "stop", "forget", "mig", "lease_ms", "condition", "epoch"}. The agent applies stops and
// forgets before starts.
struct HeartbeatReply {
  std::vector<ReplicaStart> start;
  std::vector<ReplicaStop> stop;
  std::vector<ReplicaForget> forget;
  std::vector<MigTarget> mig;
  std::optional<int64_t> lease_ms;       // > 0
  std::optional<std::string> condition;  // the node's ("unreachable": register again)
  std::optional<int64_t> epoch;          // as RegisterReply's
  std::vector<std::string> skipped;      // decoder: what was dropped, and why; never encoded
  bool operator==(const HeartbeatReply&) const = default;
};
std::string Encode(const HeartbeatReply& r);
// A blank body reads as {}; an error only for text that is not a JSON object.
Result<HeartbeatReply> DecodeHeartbeatReply(std::string_view body);

}  // namespace gpupool
