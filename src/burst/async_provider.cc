#include "burst/async_provider.h"

#include <algorithm>
#include <utility>

#include "core/check.h"

namespace gpupool {
namespace {

using SteadyClock = std::chrono::steady_clock;

}  // namespace

AsyncProvider::AsyncProvider(std::unique_ptr<Provider> inner) : inner_(std::move(inner)) {
  GP_CHECK(inner_ != nullptr) << "AsyncProvider needs a provider to run";
  worker_ = std::thread([this] { Run(); });
}

AsyncProvider::~AsyncProvider() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  worker_.join();
}

Result<std::string> AsyncProvider::Provision(const ProvisionRequest& request, int index, Time now) {
  ProvisionCall c{request, index};
  c.request.request_id = "async-" + std::to_string(now.millis()) + "-" + std::to_string(++seq_);
  std::string id = c.request.request_id;
  Queue({std::move(c), now, SteadyClock::now()});
  return id;
}

std::vector<ProvisionedNode> AsyncProvider::Poll(Time /*now*/) {
  std::vector<ProvisionedNode> out;
  {
    std::lock_guard<std::mutex> lock(mu_);
    out.swap(ready_);
  }
  std::sort(out.begin(), out.end(), [](const ProvisionedNode& a, const ProvisionedNode& b) {
    return a.ready != b.ready ? a.ready < b.ready : a.request_id < b.request_id;
  });
  return out;
}

Status AsyncProvider::Release(const std::string& node_name, Time now) {
  Queue({ReleaseCall{node_name}, now, SteadyClock::now()});
  return Ok();
}

ProviderFailures AsyncProvider::Failures() {
  std::lock_guard<std::mutex> lock(mu_);
  return std::exchange(failures_, {});
}

void AsyncProvider::SetOffers(const std::map<FlavorId, OnDemandOffer>& offers) {
  // Through the queue, like every call: the inner provider is the worker's (invariant 1).
  Queue({OffersCall{offers}, Time(), SteadyClock::now()});
}

size_t AsyncProvider::outstanding() const {
  std::lock_guard<std::mutex> lock(mu_);
  return queue_.size() + (running_ ? 1 : 0);
}

void AsyncProvider::Queue(Call call) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(call));
  }
  cv_.notify_one();
}

void AsyncProvider::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (stopping_) break;
    const Call call = std::move(queue_.front());
    queue_.pop_front();
    running_ = true;
    lock.unlock();
    Do(call);
    lock.lock();
    running_ = false;
  }
  std::deque<Call> left = std::exchange(queue_, {});
  lock.unlock();
  ShutDown(std::move(left));
}

void AsyncProvider::Do(const Call& call) {
  if (const auto* offers = std::get_if<OffersCall>(&call.what)) {
    inner_->SetOffers(offers->offers);
    return;
  }
  const auto waited =
      std::chrono::duration_cast<std::chrono::milliseconds>(SteadyClock::now() - call.queued);
  const Time start = call.now + Duration::Millis(waited.count());
  last_start_ = std::max(last_start_, start);
  if (const auto* p = std::get_if<ProvisionCall>(&call.what)) {
    DoProvision(*p, start);
    return;
  }
  const std::string& name = std::get<ReleaseCall>(call.what).node_name;
  Status s = inner_->Release(name, start);
  if (s.ok()) return;
  std::lock_guard<std::mutex> lock(mu_);
  failures_.releases.push_back({name, s.error()});
}

void AsyncProvider::DoProvision(const ProvisionCall& c, Time start) {
  const std::string& ours = c.request.request_id;
  const Result<std::string> id = inner_->Provision(c.request, c.index, start);
  // A synchronous provider has the node now (REQUIRES); anything else it returns is passed on
  // as it is (its owner gives back a node nobody waits for).
  std::vector<ProvisionedNode> made = inner_->Poll(start);
  bool came = false;
  for (ProvisionedNode& n : made) {
    if (id.ok() && n.request_id == *id) {
      n.request_id = ours;
      came = true;
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (ProvisionedNode& n : made) ready_.push_back(std::move(n));
  if (!id.ok()) {
    failures_.provisions.push_back({ours, id.error()});
  } else if (!came) {
    failures_.provisions.push_back(
        {ours, {ErrorCode::kUnavailable, "the provider returned no node for request " + *id}});
  }
}

void AsyncProvider::ShutDown(std::deque<Call> left) {
  for (const Call& call : left) {
    if (std::holds_alternative<ReleaseCall>(call.what)) Do(call);
  }
  std::vector<ProvisionedNode> unseen;
  {
    std::lock_guard<std::mutex> lock(mu_);
    unseen.swap(ready_);
  }
  for (const ProvisionedNode& n : unseen) (void)inner_->Release(n.name, last_start_);
}

}  // namespace gpupool
