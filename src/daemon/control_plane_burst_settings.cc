// ControlPlane's burst settings (docs/design/burst.md, "Settings through the API"): the
// configuration file's burst: section gives the provider and the first offers and policies;
// GET/PUT /v1/burst/settings read and replace the offers and policies without a restart,
// journaled as "burst_settings" records, so the last one is in force after a restart too.
// On-demand usage is billed at the offer prices in force when it ran.
#include <algorithm>
#include <nlohmann/json.hpp>

#include "daemon/control_plane.h"
#include "daemon/log.h"
#include "daemon/reply.h"
#include "policy/calendar/calendar.h"
#include "store/codec.h"

namespace gpupool {

using namespace reply;

namespace {

// The offers and tenants of `s` as the API and the journal write them (no provider).
Json OffersAndTenants(const Catalogue& cat, const BurstSettings& s) {
  Json j = BurstSettingsToJson(cat, s);
  return {{"offers", j["offers"]}, {"tenants", j["tenants"]}};
}

}  // namespace

Status ControlPlane::EnableBurst(const BurstSettings& settings, std::unique_ptr<Provider> provider) {
  burst_file_ = settings;
  provider_ = std::move(provider);
  if (!js_->burst_changes().empty()) {
    const auto& [at, last] = js_->burst_changes().back();
    const Catalogue& cat = state().catalogue();
    if (OffersAndTenants(cat, last) != OffersAndTenants(cat, settings)) {
      Log("warn", "burst offers and policies changed through the API are in force, not the configuration file's",
          {{"changed_at", Rfc3339(at)}});
    }
  }
  return UseBurstInForce();
}

Status ControlPlane::UseBurstInForce() {
  const BurstSettings& s = js_->burst_changes().empty() ? burst_file_ : js_->burst_changes().back().second;
  std::map<TenantId, BurstPolicy> policies;
  for (const auto& [name, p] : s.tenants) {
    Result<TenantId> t = state().FindTenant(name);
    if (!t.ok()) return InvalidArgument("burst.tenants: unknown tenant '" + name + "'");
    if (js_->deleted().count(*t)) {  // deleted through the API since the settings were written
      Log("warn", "burst policy of a deleted tenant ignored", {{"tenant", name}});
      continue;
    }
    policies[*t] = p;
  }
  burst_policies_ = std::move(policies);
  burst_offers_ = s.offers;
  provider_->SetOffers(burst_offers_);
  return Ok();
}

PriceHistory ControlPlane::BillingPrices() const {
  // On-demand prices over time: the file's offers, then each change's from its time on, so a
  // change never re-prices what ran before it. Merged with the price lists' own periods.
  std::vector<std::pair<Time, const std::map<FlavorId, OnDemandOffer>*>> offers = {{Time(), &burst_file_.offers}};
  for (const auto& [at, s] : js_->burst_changes()) offers.emplace_back(at, &s.offers);
  const PriceHistory lists = js_->prices().empty() ? PriceHistory{{Time(), PriceList()}} : js_->prices();
  std::vector<Time> starts;
  for (const PricedPeriod& p : lists) starts.push_back(p.from);
  for (const auto& [at, o] : offers) starts.push_back(at);
  std::sort(starts.begin(), starts.end());
  starts.erase(std::unique(starts.begin(), starts.end()), starts.end());
  // In force at t: the last one starting at or before t; before the first, the first.
  auto at_time = [](const auto& v, Time t, auto from) {
    size_t i = 0;
    while (i + 1 < v.size() && !(t < from(v[i + 1]))) ++i;
    return i;
  };
  PriceHistory h;
  for (Time t : starts) {
    PricedPeriod p{t, lists[at_time(lists, t, [](const PricedPeriod& x) { return x.from; })].prices};
    const auto& o = *offers[at_time(offers, t, [](const auto& x) { return x.first; })].second;
    for (const auto& [f, offer] : o) p.prices.on_demand_micros_per_gpu_hour.try_emplace(f, offer.micros_per_gpu_hour);
    h.push_back(std::move(p));
  }
  return h;
}

Result<BurstSettings> ControlPlane::CheckBurstSettings(const std::string& body) const {
  const Json j = Json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return InvalidArgument("burst settings must be a JSON object");
  BurstSettings s;
  GP_RETURN_IF_ERROR(DecodeBurstSettings(state().catalogue(), j, &s));
  // The provider runs the operator's scripts: it is set where the operator sets them, in the
  // configuration file, and the nodes it made stay its own.
  const bool names_provider = j.contains("provider") || j.contains("create_command") ||
                              j.contains("delete_command") || j.contains("command_timeout_s");
  const CommandProviderConfig& mine = burst_file_.command;
  if (names_provider && (s.provider != burst_file_.provider ||
                         (s.provider == "command" && (s.command.create_command != mine.create_command ||
                                                      s.command.delete_command != mine.delete_command ||
                                                      s.command.timeout != mine.timeout)))) {
    return InvalidArgument("burst: the provider (" + burst_file_.provider +
                           ") is set in the configuration file; change it there and restart");
  }
  for (const auto& [name, p] : s.tenants) {
    Result<TenantId> t = state().FindTenant(name);
    if (!t.ok() || js_->deleted().count(*t)) return InvalidArgument("burst.tenants: unknown tenant '" + name + "'");
  }
  for (const BurstNode& b : js_->fleet()) {
    if (!b.released && !s.offers.count(b.flavor)) {
      return FailedPrecondition("burst.offers: " + state().catalogue().model(b.flavor).name +
                                " has on-demand nodes live or on their way; keep its offer until they are released");
    }
  }
  return s;
}

Reply ControlPlane::GetBurstSettings(const CallContext& c) {
  if (c.principal == nullptr) return Unauthenticated();
  if (!c.principal->admin()) return Forbidden("read the burst settings");
  const BurstSettings& s = js_->burst_changes().empty() ? burst_file_ : js_->burst_changes().back().second;
  Json j = BurstSettingsToJson(state().catalogue(), s);
  // The provider is the file's, whatever changed since.
  Json file = BurstSettingsToJson(state().catalogue(), burst_file_);
  for (const char* key : {"provider", "create_command", "delete_command", "command_timeout_s"}) {
    j.erase(key);
    if (file.contains(key)) j[key] = file[key];
  }
  if (!provider_) j["provider"] = nullptr;
  j["configured"] = provider_ != nullptr;
  j["changed_at"] = js_->burst_changes().empty() ? Json(nullptr) : Json(Rfc3339(js_->burst_changes().back().first));
  return JsonReply(200, j);
}

Reply ControlPlane::SetBurstSettings(const CallContext& c, const std::string& body) {
  if (c.principal == nullptr) return Unauthenticated();
  if (!c.principal->admin()) return Forbidden("change the burst settings");
  if (!provider_) {
    return Err(FailedPrecondition("burst to on-demand is not configured: its provider is set in the configuration "
                                  "file's burst: section, read at start (docs/design/burst.md)"));
  }
  Result<BurstSettings> s = CheckBurstSettings(body);
  if (!s.ok()) return Err(s.error());
  if (Status st = Commit(BurstSettingsChanged{c.now, *s}); !st.ok()) return Err(st.error());
  if (Status st = UseBurstInForce(); !st.ok()) return Err(st.error());  // checked above: cannot fail
  Audit(c, "burst.settings.set", "burst settings");
  Log("info", "burst settings changed",
      {{"by", c.principal->name}, {"offers", std::to_string(s->offers.size())},
       {"tenants", std::to_string(s->tenants.size())}});
  return GetBurstSettings(c);
}

}  // namespace gpupool
