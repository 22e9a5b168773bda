#include "burst/sim_provider.h"

#include <algorithm>
#include <tuple>
#include <utility>

namespace gpupool {
namespace {

// "0042": at least `width` digits.
std::string Padded(uint64_t v, size_t width) {
  std::string s = std::to_string(v);
  if (s.size() < width) s.insert(0, width - s.size(), '0');
  return s;
}

}  // namespace

SimulatedProvider::SimulatedProvider(const Catalogue& catalogue,
                                     std::map<FlavorId, OnDemandOffer> offers)
    : catalogue_(catalogue) {
  SetOffers(offers);
}

void SimulatedProvider::SetOffers(const std::map<FlavorId, OnDemandOffer>& offers) {
  for (const auto& [flavor, offer] : offers) {
    GP_CHECK(flavor == offer.flavor && ValidateOffer(offer, catalogue_).ok())
        << "simulated provider: bad offer for flavor " << flavor.value();
  }
  offers_ = offers;
}

Result<std::string> SimulatedProvider::Provision(const ProvisionRequest& request, int index,
                                                 Time now) {
  GP_RETURN_IF_ERROR(ValidateProvisionRequest(request, index, catalogue_));
  const std::string& flavor = catalogue_.model(request.flavor).name;
  const auto it = offers_.find(request.flavor);
  if (it == offers_.end()) return InvalidArgument("no on-demand offer for " + flavor);
  const OnDemandOffer& offer = it->second;
  if (request.gpus_per_node != offer.gpus_per_node) {
    return InvalidArgument("on-demand " + flavor + " nodes have " +
                           std::to_string(offer.gpus_per_node) + " GPUs, not " +
                           std::to_string(request.gpus_per_node));
  }
  int& used = in_use_[request.flavor];
  if (used >= offer.max_nodes) {
    return Error{ErrorCode::kResourceExhausted,
                 "on-demand " + flavor + " capacity exhausted: " + std::to_string(used) + " of " +
                     std::to_string(offer.max_nodes) + " nodes requested or in use"};
  }
  ++used;
  const uint64_t seq = ++seq_;
  Requested r{.seq = seq, .ready = now + offer.provisioning_delay};
  r.node = {.request_id = "sim-" + Padded(seq, 6),
            .name = "od-" + flavor + "-" + Padded(seq, 4),
            .flavor = request.flavor,
            .gpus = offer.gpus_per_node,
            .cpu_milli = offer.cpu_milli,
            .memory_mib = offer.memory_mib,
            .ready = r.ready};
  requested_.push_back(std::move(r));
  return requested_.back().node.request_id;
}

std::vector<ProvisionedNode> SimulatedProvider::Poll(Time now) {
  std::vector<Requested> done;
  std::vector<Requested> waiting;
  for (Requested& r : requested_) (r.ready <= now ? done : waiting).push_back(std::move(r));
  requested_ = std::move(waiting);
  std::sort(done.begin(), done.end(), [](const Requested& a, const Requested& b) {
    return std::tie(a.ready, a.seq) < std::tie(b.ready, b.seq);
  });
  std::vector<ProvisionedNode> out;
  for (Requested& r : done) {
    live_.emplace(r.node.name, r.node.flavor);
    out.push_back(std::move(r.node));
  }
  return out;
}

Status SimulatedProvider::Release(const std::string& node_name, Time /*now*/) {
  const auto it = live_.find(node_name);
  if (it == live_.end()) return NotFound("no live on-demand node " + node_name);
  --in_use_[it->second];
  live_.erase(it);
  return Ok();
}

int SimulatedProvider::in_use(FlavorId flavor) const {
  const auto it = in_use_.find(flavor);
  return it == in_use_.end() ? 0 : it->second;
}

}  // namespace gpupool
