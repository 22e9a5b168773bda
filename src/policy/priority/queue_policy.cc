#include "policy/priority/queue_policy.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace gpupool {
namespace {

constexpr double kInfinite = std::numeric_limits<double>::infinity();

double Gpus(const Job& job, const Catalogue& cat) { return job.Eq(cat).ToGpus(); }

// Time run so far: earlier attempts and, while running, the current one.
Duration RanBy(const Job& job, Time now) {
  Duration d = job.ran;
  if (job.state == JobState::kRunning && now > job.started) d = d + (now - job.started);
  return d;
}

std::string Hours(double gpu_s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", gpu_s / 3600.0);
  return buf;
}

}  // namespace

Status Validate(const QueuePolicyConfig& cfg) {
  if (cfg.las_thresholds_gpu_s.empty()) return InvalidArgument("las thresholds: give at least one");
  for (size_t i = 0; i < cfg.las_thresholds_gpu_s.size(); ++i) {
    if (cfg.las_thresholds_gpu_s[i] <= 0 || (i > 0 && cfg.las_thresholds_gpu_s[i] <= cfg.las_thresholds_gpu_s[i - 1])) {
      return InvalidArgument("las thresholds must be positive and strictly increasing GPU-seconds");
    }
  }
  if (cfg.starvation_after <= Duration()) return InvalidArgument("starvation_after must be positive");
  if (cfg.max_preemptions_per_cycle < 0) return InvalidArgument("max_preemptions_per_cycle must be 0 or more");
  return Ok();
}

QueueOrder OrderOf(const QueuePolicyConfig& cfg, const Tenant& tenant) {
  return tenant.queue_policy ? *tenant.queue_policy : cfg.order;
}

double AttainedGpuSeconds(const Job& job, const Catalogue& cat, Time now) {
  return Gpus(job, cat) * static_cast<double>(RanBy(job, now).millis()) / 1000.0;
}

double RemainingGpuSeconds(const Job& job, const Catalogue& cat, Time now) {
  if (job.spec.estimated_duration.is_infinite()) return kInfinite;
  const int64_t left = std::max<int64_t>(0, job.spec.estimated_duration.millis() - RanBy(job, now).millis());
  return Gpus(job, cat) * static_cast<double>(left) / 1000.0;
}

int LasQueue(const QueuePolicyConfig& cfg, double attained_gpu_s) {
  const auto& t = cfg.las_thresholds_gpu_s;
  return static_cast<int>(std::upper_bound(t.begin(), t.end(), attained_gpu_s,
                                           [](double a, int64_t b) { return a < static_cast<double>(b); }) -
                          t.begin());
}

bool Starved(const QueuePolicyConfig& cfg, const Job& job, Time now) {
  return now - job.submitted >= cfg.starvation_after;
}

QueueRank RankOf(const QueuePolicyConfig& cfg, QueueOrder order, const Job& job, const Catalogue& cat, Time now) {
  QueueRank r;
  r.starved = Starved(cfg, job, now);
  if (r.starved) return r;  // FIFO among the starved
  switch (order) {
    case QueueOrder::kFifo: break;
    case QueueOrder::kLas: r.rank = LasQueue(cfg, AttainedGpuSeconds(job, cat, now)); break;
    case QueueOrder::kSrsf: r.rank = RemainingGpuSeconds(job, cat, now); break;
    case QueueOrder::kSjf:
      r.rank = job.spec.estimated_duration.is_infinite()
                   ? kInfinite
                   : Gpus(job, cat) * static_cast<double>(job.spec.estimated_duration.millis()) / 1000.0;
      break;
  }
  return r;
}

bool QueueMayPreempt(const QueuePolicyConfig& cfg, QueueOrder order, const Job& job, const Job& victim,
                     const Catalogue& cat, Time now) {
  if (!Preemptive(order) || victim.state != JobState::kRunning || Starved(cfg, victim, now)) return false;
  if (Starved(cfg, job, now)) return true;
  if (order == QueueOrder::kSrsf) {
    const double mine = RemainingGpuSeconds(job, cat, now);
    return mine < RemainingGpuSeconds(victim, cat, now);
  }
  return LasQueue(cfg, AttainedGpuSeconds(job, cat, now)) < LasQueue(cfg, AttainedGpuSeconds(victim, cat, now));
}

double VictimRank(QueueOrder order, const Job& victim, const Catalogue& cat, Time now) {
  return order == QueueOrder::kSrsf ? RemainingGpuSeconds(victim, cat, now) : AttainedGpuSeconds(victim, cat, now);
}

Time NextOrderChange(const QueuePolicyConfig& cfg, QueueOrder order, const Job& job, const Catalogue& cat, Time now) {
  if (order == QueueOrder::kFifo) return Time::Never();
  if (job.state == JobState::kPending) {
    const Time starved = job.submitted + cfg.starvation_after;
    return starved > now ? starved : Time::Never();
  }
  if (order != QueueOrder::kLas || job.state != JobState::kRunning) return Time::Never();
  const double gpus = Gpus(job, cat);
  const double attained = AttainedGpuSeconds(job, cat, now);
  const auto& t = cfg.las_thresholds_gpu_s;
  const size_t q = static_cast<size_t>(LasQueue(cfg, attained));
  if (q >= t.size() || gpus <= 0) return Time::Never();
  // Rounded up to the next millisecond, so that the job has crossed the threshold by then.
  const double ms = std::ceil((static_cast<double>(t[q]) - attained) * 1000.0 / gpus);
  return now + Duration::Millis(std::max<int64_t>(1, static_cast<int64_t>(ms)));
}

std::string DescribePosition(const QueuePolicyConfig& cfg, QueueOrder order, const Job& job, const Catalogue& cat,
                             Time now, size_t ahead) {
  const std::string n = std::to_string(ahead) + (ahead == 1 ? " job" : " jobs");
  if (Starved(cfg, job, now)) {
    return std::string(QueueOrderName(order)) + ": starved (submitted " + ToString(now - job.submitted) +
           " ago, the bound is " + ToString(cfg.starvation_after) + "): " + n + " ahead, all starved earlier";
  }
  switch (order) {
    case QueueOrder::kFifo: return "fifo: " + n + " ahead, submitted earlier";
    case QueueOrder::kLas: {
      const double a = AttainedGpuSeconds(job, cat, now);
      return "las queue " + std::to_string(LasQueue(cfg, a)) + " (" + Hours(a) + " GPU-hours attained): " + n +
             " ahead, in lower queues or earlier";
    }
    case QueueOrder::kSrsf: {
      const double r = RemainingGpuSeconds(job, cat, now);
      return "srsf (" + (std::isinf(r) ? std::string("no estimate") : Hours(r) + " GPU-hours remaining") + "): " + n +
             " ahead, with less remaining service";
    }
    case QueueOrder::kSjf: return "sjf: " + n + " ahead, shorter";
  }
  return "";
}

}  // namespace gpupool
