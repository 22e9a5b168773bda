// libFuzzer target for the daemon's untrusted-input parsers: the JSON request decoders of
// api/decode.h and the YAML config parser of daemon/config.h. Built with clang++-14 and
// -fsanitize=fuzzer,address,undefined by tests/fuzz/CMakeLists.txt; see tests/fuzz/README.md.
//
// Input layout: the first byte selects the parser and the caller, the rest is the body.
//   'j'  DecodeJobRequest as a member of tenant "research" (the scoping path: other tenants
//        must read as unknown)
//   'J'  DecodeJobRequest as a cluster admin
//   'k'  DecodeJobRequest as the tenant admin of "interns"
//   't'  DecodeTenantRequest, create (POST /v1/tenants)
//   'T'  DecodeTenantRequest, patch of "research" (PATCH /v1/tenants/research)
//   'p'  DecodePriorityClassRequest
//   'y'  ParseDaemonConfig (YAML)
//   'r'  DecodeReservationRequest as a member of "research"; 'R' as a cluster admin
//   'z'  ParseRfc3339
//   'P'  DecodePriceList
//   'g'  DecodeRegisterRequest, 'h' DecodeHeartbeatRequest, 'H' DecodeHeartbeatReply (the agent
//        protocol, api/agent_protocol.h): what decodes must encode to what decodes the same
// Any other first byte maps onto these fourteen by its value modulo 14, so every input is used.
//
// Besides "does not crash, leak or hit UB", each target checks what the daemon relies on when
// a decoder says yes; a violated property aborts, which libFuzzer reports as a crash.
// Exceptions are not caught here: the decoders promise not to throw.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "api/agent_protocol.h"
#include "api/auth.h"
#include "api/decode.h"
#include "daemon/config.h"
#include "model/demo_cluster.h"
#include "model/events.h"
#include "model/state.h"

namespace gpupool {
namespace {

[[noreturn]] void Violated(const char* what, const std::string& detail = "") {
  std::fprintf(stderr, "decode_fuzz: property violated: %s %s\n", what, detail.c_str());
  std::abort();
}

#define FUZZ_REQUIRE(cond, detail) \
  do {                             \
    if (!(cond)) Violated(#cond, (detail)); \
  } while (0)

// The fixed world every input is decoded against: the demo cluster (tenants research,
// product, interns; classes inference, training, batch; H100 whole, H100 MIG, A100 shared).
struct World {
  State state = DemoCluster();
  TenantId research = *state.FindTenant("research");
  TenantId interns = *state.FindTenant("interns");
  Principal member{"alice", Role::kMember, research, "tok-alice"};
  Principal admin{"root", Role::kClusterAdmin, TenantId(), "tok-root"};
  Principal interns_admin{"ivan", Role::kTenantAdmin, interns, "tok-ivan"};
};

const World& TheWorld() {
  static const World* w = new World();  // never destroyed: no exit-time order issues
  return *w;
}

// DECODE_FUZZ_VERBOSE=1: print each input's outcome (to see why a seed is rejected).
bool Verbose() {
  static const bool v = std::getenv("DECODE_FUZZ_VERBOSE") != nullptr;
  return v;
}

void Accepted(const char* what, const std::string& name) {
  if (Verbose()) std::fprintf(stderr, "decode_fuzz: %s accepted: %s\n", what, name.c_str());
}

// Every error turns into an HTTP reply; that path must not throw either.
void Reply(const Error& e) {
  if (Verbose()) std::fprintf(stderr, "decode_fuzz: rejected: %s\n", e.message.c_str());
  const int status = HttpStatus(e.code);
  FUZZ_REQUIRE(status >= 400 && status <= 599, std::to_string(status));
  const std::string body = ErrorBody(e, "details");
  FUZZ_REQUIRE(!body.empty(), e.message);
}

void FuzzJob(const Principal& caller, std::string_view body) {
  const World& w = TheWorld();
  Result<JobSpec> spec = DecodeJobRequest(w.state, caller, body);
  if (!spec.ok()) {
    Reply(spec.error());
    return;
  }
  Accepted("job", spec->name);
  // Scoping: an accepted job always belongs to a tenant the caller may see.
  FUZZ_REQUIRE(caller.Sees(spec->tenant), spec->name);
  FUZZ_REQUIRE(spec->replicas >= 1 && spec->replicas <= 1024, std::to_string(spec->replicas));
  FUZZ_REQUIRE(!spec->command.empty() && spec->command.size() <= 256, spec->name);
  // What POST /v1/jobs does next: apply JobSubmitted (on a copy) and keep the invariants.
  State copy = w.state;
  const JobSubmitted e{copy.NextJobId(), *spec, Time()};
  Status applied = Apply(copy, e);
  FUZZ_REQUIRE(applied.ok(), applied.ok() ? "" : applied.error().message);
  Status inv = CheckInvariants(copy);
  FUZZ_REQUIRE(inv.ok(), inv.ok() ? "" : inv.error().message);
}

void FuzzTenant(std::string_view body, bool patch) {
  const World& w = TheWorld();
  const Tenant& base = w.state.tenant(w.research);
  Result<Tenant> t = DecodeTenantRequest(w.state, body, patch ? &base : nullptr);
  if (!t.ok()) {
    Reply(t.error());
    return;
  }
  Accepted(patch ? "tenant patch" : "tenant", t->name);
  FUZZ_REQUIRE(!t->name.empty() && t->name.size() <= 63, t->name);
  FUZZ_REQUIRE(t->weight_milli > 0 && t->weight_milli <= 1000000, std::to_string(t->weight_milli));
  for (const auto& [flavor, q] : t->quotas) {
    FUZZ_REQUIRE(flavor.valid(), t->name);
    FUZZ_REQUIRE(q.guaranteed >= GpuEq(), t->name);
  }
  // What the daemon does next: add (create) or replace (patch) the tenant, on a copy.
  State copy = w.state;
  if (patch) {
    FUZZ_REQUIRE(t->name == base.name && t->id == base.id, t->name);
    (void)copy.UpdateTenant(*t);
  } else if (!copy.FindTenant(t->name).ok()) {
    (void)copy.AddTenant(*t);
  }
  Status inv = CheckInvariants(copy);
  FUZZ_REQUIRE(inv.ok(), inv.ok() ? "" : inv.error().message);
}

void FuzzPriorityClass(std::string_view body) {
  Result<PriorityClass> pc = DecodePriorityClassRequest(body);
  if (!pc.ok()) {
    Reply(pc.error());
    return;
  }
  Accepted("priority class", pc->name);
  FUZZ_REQUIRE(!pc->name.empty() && pc->name.size() <= 63, pc->name);
  FUZZ_REQUIRE(pc->value >= -1000000000 && pc->value <= 1000000000, std::to_string(pc->value));
  FUZZ_REQUIRE(pc->grace_period >= Duration() && pc->grace_period <= Duration::Seconds(86400),
               pc->name);
  State copy = TheWorld().state;
  if (!copy.FindPriorityClass(pc->name).ok()) (void)copy.AddPriorityClass(*pc);
}

void FuzzReservation(const Principal& caller, std::string_view body) {
  const World& w = TheWorld();
  Result<ReservationRequest> r = DecodeReservationRequest(w.state, caller, body);
  if (!r.ok()) {
    Reply(r.error());
    return;
  }
  Accepted("reservation", std::to_string(r->amount.units()));
  FUZZ_REQUIRE(r->start < r->end, "window");
  FUZZ_REQUIRE(r->amount > GpuEq() && r->amount <= GpuEq::Gpus(100000), std::to_string(r->amount.units()));
  FUZZ_REQUIRE(r->maintenance != r->tenant.valid(), "tenant xor maintenance");
  FUZZ_REQUIRE(!r->tenant.valid() || caller.Sees(r->tenant), "scoping");
}

// A time that parses must print back (as UTC) to a time that parses to the same instant.
void FuzzTime(std::string_view text) {
  Result<Time> t = ParseRfc3339(text);
  if (!t.ok()) {
    Reply(t.error());
    return;
  }
  FUZZ_REQUIRE(t->millis() >= -24 * 3600 * 1000 && t->millis() < int64_t{253402300800000} + 24 * 3600 * 1000,
               std::to_string(t->millis()));
}

// A price list that decodes must encode to text that decodes to the same list.
void FuzzPrices(std::string_view body) {
  Result<PriceList> p = DecodePriceList(TheWorld().state, body);
  if (!p.ok()) {
    Reply(p.error());
    return;
  }
  Accepted("prices", std::to_string(p->micros_per_gpu_hour.size()));
  for (const auto& [f, m] : p->micros_per_gpu_hour) FUZZ_REQUIRE(m >= 0 && m <= PriceList::kMaxMicrosPerGpuHour, std::to_string(m));
  Result<PriceList> again = DecodePriceList(TheWorld().state, PriceListToJson(TheWorld().state, *p));
  FUZZ_REQUIRE(again.ok() && *again == *p, "price list round trip");
}

// The cluster's size limits are the daemon's checks as they are, with smaller bounds: a
// 100,000-node cluster takes seconds and most of the fuzzer's memory under ASan, and what the
// fuzzer looks for (the totals' arithmetic, the refusal before anything is built) is the same
// at 2,000 nodes. The daemon's own bounds are tested in DaemonConfig.RefusesAClusterBeyond...
void FuzzConfig(std::string_view text) {
  const ConfigLimits small{.nodes = 2000, .gpus = 16000, .labels = 20000, .label_bytes = 1 << 20};
  Result<DaemonConfig> c = ParseDaemonConfig(std::string(text), small);
  if (!c.ok()) {
    // Not Reply(): a config error is printed by `gpupool serve`, never sent as a JSON body
    // (its message may quote the file's bytes, which need not be UTF-8).
    if (Verbose()) std::fprintf(stderr, "decode_fuzz: rejected: %s\n", c.error().message.c_str());
    return;
  }
  Accepted("config", std::to_string(c->cluster.nodes().size()) + " nodes");
  FUZZ_REQUIRE(static_cast<int64_t>(c->cluster.nodes().size()) <= small.nodes, "node limit");
  FUZZ_REQUIRE(c->tick_ms >= 10 && c->tick_ms <= 60000, std::to_string(c->tick_ms));
  Status inv = CheckInvariants(c->cluster);
  FUZZ_REQUIRE(inv.ok(), inv.ok() ? "" : inv.error().message);
}

// An agent-protocol body that decodes must encode to one that decodes to the same value (the
// decoder's `skipped` and a start's `error` are not on the wire, so they are cleared first).
template <typename T, typename Decode>
void FuzzAgentBody(const char* what, std::string_view body, Decode decode) {
  Result<T> v = decode(body);
  if (!v.ok()) {
    Reply(v.error());
    return;
  }
  Accepted(what, "");
  T clean = *v;
  if constexpr (requires { clean.skipped; }) clean.skipped.clear();
  if constexpr (requires { clean.start; }) {
    std::erase_if(clean.start, [](const ReplicaStart& s) { return !s.error.empty(); });
  }
  Result<T> again = decode(Encode(clean));
  FUZZ_REQUIRE(again.ok(), again.ok() ? "" : again.error().message);
  T second = *again;
  if constexpr (requires { second.skipped; }) second.skipped.clear();
  FUZZ_REQUIRE(second == clean, std::string(what) + " round trip");
}

}  // namespace
}  // namespace gpupool

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpupool;
  if (size == 0) return 0;
  const World& w = TheWorld();
  const std::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);
  static constexpr char kSelectors[] = {'j', 'J', 'k', 't', 'T', 'p', 'y', 'r', 'R', 'z', 'P', 'g', 'h', 'H'};
  char sel = static_cast<char>(data[0]);
  bool known = false;
  for (char s : kSelectors) known = known || s == sel;
  if (!known) sel = kSelectors[data[0] % sizeof(kSelectors)];
  switch (sel) {
    case 'j': FuzzJob(w.member, body); break;
    case 'J': FuzzJob(w.admin, body); break;
    case 'k': FuzzJob(w.interns_admin, body); break;
    case 't': FuzzTenant(body, /*patch=*/false); break;
    case 'T': FuzzTenant(body, /*patch=*/true); break;
    case 'p': FuzzPriorityClass(body); break;
    case 'r': FuzzReservation(w.member, body); break;
    case 'R': FuzzReservation(w.admin, body); break;
    case 'z': FuzzTime(body); break;
    case 'P': FuzzPrices(body); break;
    case 'g': FuzzAgentBody<RegisterRequest>("register", body, DecodeRegisterRequest); break;
    case 'h': FuzzAgentBody<HeartbeatRequest>("heartbeat", body, DecodeHeartbeatRequest); break;
    case 'H': FuzzAgentBody<HeartbeatReply>("heartbeat reply", body, DecodeHeartbeatReply); break;
    default: FuzzConfig(body); break;
  }
  return 0;
}
