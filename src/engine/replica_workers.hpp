// SPDX-License-Identifier: Apache-2.0
// The threads of data-parallel training on several GPUs in one process: one per replica for the whole
// run. Every step runs all replicas at once (each replica's NCCL calls wait for the others' to be in
// flight), so a step hands each worker its job and waits for all of them. Creating and joining a thread
// per replica per step costs about as long as a replayed step; these threads live as long as the run.
#pragma once
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace gpuvs::engine {

class ReplicaWorkers {
 public:
  /// Starts `count` (>= 1) threads, idle until run().
  explicit ReplicaWorkers(std::size_t count);
  /// Stops and joins the threads (after the step in progress, if any).
  ~ReplicaWorkers();
  ReplicaWorkers(const ReplicaWorkers&) = delete;
  ReplicaWorkers& operator=(const ReplicaWorkers&) = delete;

  /// Runs job(r) on worker r for every r, all at once, and returns when every job has returned. If jobs
  /// threw, the first replica's error (lowest r) is rethrown here, after all have finished; the workers
  /// stay usable. Not reentrant: one step at a time, from one thread.
  void run(const std::function<void(std::size_t)>& job);

  std::size_t size() const { return threads_.size(); }

 private:
  void work(std::size_t r);

  std::mutex mutex_;
  std::condition_variable start_, done_;
  const std::function<void(std::size_t)>* job_ = nullptr;
  std::size_t generation_ = 0;  // steps started; a worker runs each generation once
  std::size_t running_ = 0;     // jobs of the current step not yet returned
  bool stopping_ = false;
  std::vector<std::exception_ptr> errors_;
  std::vector<std::thread> threads_;
};

}  // namespace gpuvs::engine
