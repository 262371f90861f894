// SPDX-License-Identifier: Apache-2.0
// The device memory allocator behind the engine's two allocation policies, TensorFlow's pair:
//   growth       — take memory from the device as it is asked for, in segments, and keep freed blocks in a
//                  cache for reuse (best fit, split, coalesce), so steady-state steps never call the device
//                  allocator (cudaMalloc synchronises the device);
//   preallocate  — map FRACTION of the device's memory up front as one segment and sub-allocate from it
//                  (TensorFlow's default), failing with the numbers when the pool is exhausted.
// It is written against a RawAllocator, so the same code runs over cudaMalloc in the CUDA plugin and over
// host memory in the tests. Not thread-safe: one allocator per device and executor thread.
#pragma once
#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace gpuvs::engine {

class RawAllocator {
 public:
  virtual ~RawAllocator() = default;
  /// Memory from the device, aligned to at least 256 bytes; nullptr when the device has no more.
  virtual void* allocate(std::size_t bytes) = 0;
  virtual void deallocate(void* p, std::size_t bytes) = 0;
  /// Bytes the device has in all (for preallocate's fraction).
  virtual std::size_t capacity() const = 0;
  virtual std::string name() const = 0;
};

/// Host memory (aligned_alloc), capacity as given: the allocator's test double is real memory.
class HostRawAllocator final : public RawAllocator {
 public:
  explicit HostRawAllocator(std::size_t capacity) : capacity_(capacity) {}
  void* allocate(std::size_t bytes) override;
  void deallocate(void* p, std::size_t bytes) override;
  std::size_t capacity() const override { return capacity_; }
  std::string name() const override { return "host"; }
  std::size_t outstanding() const { return outstanding_; }

 private:
  std::size_t capacity_, outstanding_ = 0;
};

enum class AllocMode { growth, preallocate };

struct AllocStats {
  std::size_t reserved = 0;      // held from the device (segments)
  std::size_t in_use = 0;        // handed out (rounded sizes)
  std::size_t peak_in_use = 0;
  std::size_t peak_reserved = 0;
  std::size_t segments = 0, allocations = 0, frees = 0, cache_hits = 0, device_calls = 0;
};

class CachingAllocator {
 public:
  static constexpr std::size_t kAlignment = 512;           // sizes are multiples of this; block starts keep the raw allocator's 256-byte alignment
  static constexpr std::size_t kSegment = 2u << 20;        // growth: device requests are multiples of 2 MiB

  /// preallocate: reserves `fraction` (0, 1] of raw.capacity() now; RuntimeFailure when the device refuses.
  CachingAllocator(RawAllocator& raw, AllocMode mode, double fraction = 1.0);
  ~CachingAllocator();
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  /// `bytes` (> 0) rounded up to kAlignment. RuntimeFailure naming the request, what is reserved and in use,
  /// and the largest free block when it cannot be met.
  void* allocate(std::size_t bytes);
  /// As allocate, but nullptr (the pool and the device left as they were) when the request cannot be met:
  /// for memory the caller can do without, such as a data set that can stream from the host instead.
  void* try_allocate(std::size_t bytes);
  /// A pointer from allocate(); anything else is a logic error.
  void deallocate(void* p);
  /// growth: returns wholly free segments to the device. preallocate: no-op.
  void release_cached();
  AllocStats stats() const { return stats_; }
  AllocMode mode() const { return mode_; }
  std::size_t largest_free_block() const;

 private:
  struct Block {
    char* ptr;
    std::size_t size;
    bool free;
    Block* prev;  // address neighbours within the segment
    Block* next;
    std::size_t segment;
  };
  Block* new_segment(std::size_t bytes);
  Block* make_block(const Block& v);
  void insert_free(Block* b);
  void erase_free(Block* b);

  RawAllocator& raw_;
  AllocMode mode_;
  AllocStats stats_;
  struct Segment {
    char* base;
    std::size_t size;
    Block* first;
  };
  std::vector<Segment> segments_;  // a freed segment leaves a null base
  std::multimap<std::size_t, Block*> free_;  // by size: best fit = lower_bound
  std::map<char*, Block*> live_;             // handed-out blocks by address
  std::vector<std::unique_ptr<Block>> blocks_;  // owns every Block record
  std::vector<Block*> spare_;                   // retired records (merged away), reused
};

std::string alloc_mode_name(AllocMode m);

}  // namespace gpuvs::engine
