#include "agent/mig_worker.h"

#include <utility>

namespace gpupool {

MigWorker::MigWorker(GpuProbe& probe, std::mutex& probe_mu) : probe_(probe), probe_mu_(probe_mu) {}

MigWorker::~MigWorker() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    queue_.clear();
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void MigWorker::Submit(Job job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(job));
  }
  if (!thread_.joinable()) thread_ = std::thread([this] { Loop(); });
  cv_.notify_one();
}

std::vector<MigWorker::Done> MigWorker::TakeDone() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Done> out;
  out.swap(done_);
  return out;
}

void MigWorker::Loop() {
  while (true) {
    Job job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (stop_) return;
      job = std::move(queue_.front());
      queue_.pop_front();
    }
    Done done;
    done.gpu = job.gpu;
    done.text = std::move(job.text);
    {
      std::lock_guard<std::mutex> probe_lock(probe_mu_);
      done.status = probe_.ApplyMigLayout(job.gpu, *job.model, job.layout);
      done.seen = probe_.Discover();  // whatever happened: what the GPUs hold now
    }
    std::lock_guard<std::mutex> lock(mu_);
    done_.push_back(std::move(done));
  }
}

}  // namespace gpupool
