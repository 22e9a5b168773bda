// Retention (control_plane.h, "retention"; docs/design/daemon.md, "Bounded memory"): finished jobs older
// than the retention window leave memory (the state, the scheduler's view, the job history and
// the ledger's closed intervals) for the store's history, from which the API still serves them.
//
// Each tick archives the jobs whose finish is older than the window, oldest first, a bounded
// number at a time: one "archived_job" record per job, whose body is what the API shows of it
// (its list view, its events as an admin and as its own tenant see them, its usage intervals)
// and whose HistoryKey makes the store keep that body past compaction. Applying the record (live
// or in a replay) forgets the job; a restart therefore forgets the same jobs.
#include <nlohmann/json.hpp>

#include "daemon/control_plane.h"
#include "daemon/snapshot_codec.h"

namespace gpupool {
namespace {

using Json = nlohmann::json;

}  // namespace

void ControlPlane::SetRetention(Duration retention) { retention_ = retention; }

void ControlPlane::SetMaxFinishedInMemory(size_t n) {
  GP_CHECK(n >= 1) << "at least one finished job stays in memory";
  max_finished_ = n;
}

void ControlPlane::ArchiveFinished(Time now) {
  const std::vector<JobId> due = js_->DueForArchive(now, retention_, max_finished_, kArchiveBatch);
  if (due.empty()) return;
  // The usage intervals of the jobs leaving, in one pass over the closed ones.
  std::map<JobId, std::vector<const UsageInterval*>> usage;
  for (JobId id : due) usage[id];
  for (const UsageInterval& u : ledger().closed()) {
    if (auto it = usage.find(u.job); it != usage.end()) it->second.push_back(&u);
  }
  const Principal admin{"", Role::kClusterAdmin, TenantId(), ""};
  for (JobId id : due) {
    const Job& j = *state().FindJob(id);
    const Principal own{"", Role::kMember, j.spec.tenant, ""};
    HistoryKey key{HistoryKey::Kind::kJob, static_cast<int64_t>(id.value()), state().tenant(j.spec.tenant).name,
                   std::string(JobStateName(j.state))};
    Json intervals = Json::array();
    const std::vector<const UsageInterval*>& mine = usage[id];
    if (!mine.empty()) key.usage_from_ms = mine.front()->start.millis();
    for (const UsageInterval* u : mine) {
      intervals.push_back(SnapshotCodec::EncodeInterval(*u));
      key.usage_from_ms = std::min(key.usage_from_ms, u->start.millis());
      key.usage_to_ms = std::max(key.usage_to_ms, u->end.millis());
    }
    const Json body = {{"id", id.value()},
                       {"view", JobView(admin, j, false, now)},
                       {"events", {{"admin", history().View(state(), admin, id)}, {"own", history().View(state(), own, id)}}},
                       {"usage", std::move(intervals)}};
    GP_CHECK(Commit(JobArchived{id, body.dump(), std::move(key)}).ok());
  }
  js_->ForgetArchivedUsage();
}

Result<std::optional<Json>> ControlPlane::ArchivedJobView(const CallContext& c, uint64_t id, bool events) const {
  const auto unreadable = [id](const std::string& why) {
    return Error{ErrorCode::kInternal, "job " + std::to_string(id) + " is in the store's history but cannot be read: " + why};
  };
  Result<std::optional<std::string>> body = journal_->ArchivedJob(static_cast<int64_t>(id));
  if (!body.ok()) return unreadable(body.error().message);
  if (!*body) return std::optional<Json>();
  Json j = Json::parse(**body, nullptr, false);
  if (j.is_discarded() || !j.contains("view")) return unreadable("its record is not a job's");
  Json view = std::move(j["view"]);
  Result<TenantId> tenant = state().FindTenant(view.value("tenant", ""));
  if (!tenant.ok() || !c.principal->Sees(*tenant)) return std::optional<Json>();
  if (events) view["events"] = j["events"][c.principal->admin() ? "admin" : "own"];
  return std::optional<Json>(std::move(view));
}

Result<std::vector<UsageInterval>> ControlPlane::ArchivedUsage(Time from, Time to) const {
  Result<std::vector<std::string>> bodies = journal_->ArchivedUsage(from.millis(), to.millis());
  if (!bodies.ok()) return bodies.error();
  std::vector<UsageInterval> out;
  for (const std::string& b : *bodies) {
    const Json j = Json::parse(b, nullptr, false);
    if (j.is_discarded()) return Error{ErrorCode::kInternal, "an archived job's record is not JSON"};
    for (const Json& u : j.value("usage", Json::array())) {
      Result<UsageInterval> interval = SnapshotCodec::DecodeInterval(u);
      if (!interval.ok()) return interval.error();
      out.push_back(std::move(interval).value());
    }
  }
  return out;
}

}  // namespace gpupool
