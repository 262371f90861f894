// SPDX-License-Identifier: Apache-2.0
#include "engine/replica_workers.hpp"

#include <stdexcept>

namespace gpuvs::engine {

ReplicaWorkers::ReplicaWorkers(std::size_t count) : errors_(count) {
  if (count == 0) throw std::invalid_argument("ReplicaWorkers: no replicas");
  threads_.reserve(count);
  for (std::size_t r = 0; r < count; ++r) threads_.emplace_back([this, r] { work(r); });
}

ReplicaWorkers::~ReplicaWorkers() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  start_.notify_all();
  for (auto& t : threads_) t.join();
}

void ReplicaWorkers::run(const std::function<void(std::size_t)>& job) {
  std::unique_lock lock(mutex_);
  job_ = &job;
  running_ = threads_.size();
  for (auto& e : errors_) e = nullptr;
  ++generation_;
  start_.notify_all();
  done_.wait(lock, [this] { return running_ == 0; });
  job_ = nullptr;
  for (auto& e : errors_)
    if (e) std::rethrow_exception(e);
}

void ReplicaWorkers::work(std::size_t r) {
  std::size_t seen = 0;
  for (;;) {
    const std::function<void(std::size_t)>* job = nullptr;
    {
      std::unique_lock lock(mutex_);
      start_.wait(lock, [&] { return stopping_ || generation_ != seen; });
      if (stopping_) return;
      seen = generation_;
      job = job_;
    }
    std::exception_ptr error;
    try {
      (*job)(r);
    } catch (...) {
      error = std::current_exception();
    }
    {
      std::lock_guard lock(mutex_);
      errors_[r] = error;
      if (--running_ == 0) done_.notify_one();
    }
  }
}

}  // namespace gpuvs::engine
