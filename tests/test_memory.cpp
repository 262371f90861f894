// SPDX-License-Identifier: Apache-2.0
// The caching allocator behind --memory growth|preallocate, over real host memory: reuse, split and
// coalesce, the preallocated pool's limit, and a random workload whose blocks never overlap.
#include <gtest/gtest.h>

#include <cstring>
#include <map>

#include "core/error.hpp"
#include "core/rng.hpp"
#include "engine/memory/caching_allocator.hpp"

using namespace gpuvs;
using engine::AllocMode;
using engine::CachingAllocator;
using engine::HostRawAllocator;

TEST(Memory, GrowthReusesFreedBlocksWithoutNewDeviceCalls) {
  HostRawAllocator raw(64u << 20);
  CachingAllocator a(raw, AllocMode::growth);
  void* p = a.allocate(1000);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % 256, 0u);
  EXPECT_EQ(a.stats().reserved, CachingAllocator::kSegment);  // one 2 MiB segment
  EXPECT_EQ(a.stats().in_use, 1024u);                         // rounded to 512-byte units
  a.deallocate(p);
  EXPECT_EQ(a.stats().in_use, 0u);
  const auto calls = a.stats().device_calls;
  for (int step = 0; step < 100; ++step) {  // a training loop's steady state
    void* x = a.allocate(300000);
    void* y = a.allocate(700000);
    a.deallocate(x);
    a.deallocate(y);
  }
  EXPECT_EQ(a.stats().device_calls, calls);
  EXPECT_EQ(a.stats().reserved, CachingAllocator::kSegment);
  EXPECT_GE(a.stats().cache_hits, 200u);
  EXPECT_EQ(a.stats().peak_in_use, 300032u + 700416u);
}

TEST(Memory, SplitAndCoalesceServeALargerRequestLater) {
  HostRawAllocator raw(64u << 20);
  CachingAllocator a(raw, AllocMode::growth);
  void* x = a.allocate(1 << 20);
  void* y = a.allocate(1 << 20);  // both halves of the first 2 MiB segment
  EXPECT_EQ(a.stats().segments, 1u);
  EXPECT_EQ(static_cast<char*>(y) - static_cast<char*>(x), 1 << 20);
  a.deallocate(x);
  a.deallocate(y);
  EXPECT_EQ(a.largest_free_block(), 2u << 20);  // merged back into one block
  void* z = a.allocate(2 << 20);
  EXPECT_EQ(z, x);
  EXPECT_EQ(a.stats().segments, 1u);
  a.deallocate(z);
  a.release_cached();
  EXPECT_EQ(a.stats().reserved, 0u);
  EXPECT_EQ(raw.outstanding(), 0u);
}

TEST(Memory, PreallocateTakesTheFractionUpFrontAndNeverGrows) {
  HostRawAllocator raw(16u << 20);
  CachingAllocator a(raw, AllocMode::preallocate, 0.5);
  EXPECT_EQ(a.stats().reserved, 8u << 20);
  EXPECT_EQ(raw.outstanding(), 8u << 20);
  void* p = a.allocate(6u << 20);
  try {
    a.allocate(4u << 20);
    FAIL() << "the pool should be exhausted";
  } catch (const RuntimeFailure& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("preallocate pool"), std::string::npos) << what;
    EXPECT_NE(what.find("asked 4.0 MiB"), std::string::npos) << what;
    EXPECT_NE(what.find("largest free block 2.0 MiB"), std::string::npos) << what;
  }
  EXPECT_EQ(a.stats().device_calls, 1u);
  a.deallocate(p);
  EXPECT_THROW(CachingAllocator(raw, AllocMode::preallocate, 0.0), InputError);
  EXPECT_THROW(CachingAllocator(raw, AllocMode::preallocate, 1.5), InputError);
  HostRawAllocator small(1u << 20);
  CachingAllocator full(small, AllocMode::preallocate, 1.0);
  HostRawAllocator none(0);
  EXPECT_THROW(CachingAllocator(none, AllocMode::preallocate, 1.0), RuntimeFailure);
}

TEST(Memory, GrowthReportsOutOfMemoryWithTheNumbers) {
  HostRawAllocator raw(4u << 20);
  CachingAllocator a(raw, AllocMode::growth);
  void* p = a.allocate(3u << 20);
  EXPECT_THROW(a.allocate(3u << 20), RuntimeFailure);
  a.deallocate(p);
  // Cached segments are given back before giving up: this now fits.
  void* q = a.allocate(4u << 20);
  a.deallocate(q);
  EXPECT_THROW(a.deallocate(q), std::logic_error);  // double free is caught
}

// Memory a caller can do without (the CUDA engine's device copy of the data set): try_allocate says no
// and leaves the pool as it was, where allocate throws.
TEST(Memory, TryAllocateSaysNoAndLeavesThePoolAsItWas) {
  HostRawAllocator raw(16u << 20);
  CachingAllocator pool(raw, AllocMode::preallocate, 0.5);
  void* p = pool.allocate(6u << 20);
  const auto before = pool.stats();
  EXPECT_EQ(pool.try_allocate(4u << 20), nullptr);
  EXPECT_EQ(pool.stats().in_use, before.in_use);
  EXPECT_EQ(pool.stats().allocations, before.allocations);
  EXPECT_EQ(pool.largest_free_block(), 2u << 20);
  void* q = pool.try_allocate(2u << 20);  // what fits is served as allocate would
  EXPECT_NE(q, nullptr);
  pool.deallocate(q);
  pool.deallocate(p);
  HostRawAllocator small(4u << 20);
  CachingAllocator growth(small, AllocMode::growth);
  void* r = growth.allocate(3u << 20);
  EXPECT_EQ(growth.try_allocate(3u << 20), nullptr);  // the device is full
  EXPECT_EQ(small.outstanding(), 4u << 20);
  growth.deallocate(r);
  EXPECT_NE(growth.try_allocate(4u << 20), nullptr);  // the freed block, coalesced, serves it
  EXPECT_THROW((void)growth.try_allocate(0), std::invalid_argument);
}

TEST(Memory, RandomWorkloadNeverOverlapsOrLosesBytes) {
  HostRawAllocator raw(256u << 20);
  for (AllocMode mode : {AllocMode::growth, AllocMode::preallocate}) {
    CachingAllocator a(raw, mode, 0.75);
    const CounterRng rng(5, static_cast<std::uint64_t>(mode));
    std::map<char*, std::pair<std::size_t, unsigned char>> live;  // ptr -> (bytes, fill byte)
    std::size_t expect_in_use = 0;
    for (std::uint64_t t = 0; t < 4000; ++t) {
      const bool alloc = live.empty() || rng.uniform(2 * t) < 0.55;
      if (alloc && expect_in_use < (96u << 20)) {
        const auto bytes = 1 + static_cast<std::size_t>(rng.uniform(2 * t + 1) * (rng.uniform(3 * t) < 0.1 ? 8e6 : 64e3));
        char* p = static_cast<char*>(a.allocate(bytes));
        const auto fill = static_cast<unsigned char>(t & 0xFF);
        std::memset(p, fill, bytes);
        live[p] = {bytes, fill};
        expect_in_use += (bytes + 511) / 512 * 512;
      } else if (!live.empty()) {
        auto it = live.begin();
        std::advance(it, static_cast<long>(rng.uniform(2 * t + 1) * static_cast<double>(live.size())) % static_cast<long>(live.size()));
        // Its bytes are still what was written: no other block overlapped it.
        for (std::size_t i = 0; i < it->second.first; i += 997)
          ASSERT_EQ(static_cast<unsigned char>(it->first[i]), it->second.second) << "block overwritten";
        a.deallocate(it->first);
        expect_in_use -= (it->second.first + 511) / 512 * 512;
        live.erase(it);
      }
      ASSERT_EQ(a.stats().in_use, expect_in_use);
    }
    // No two live blocks overlap.
    char* end = nullptr;
    for (const auto& [p, v] : live) {
      EXPECT_GE(p, end);
      end = p + v.first;
    }
    for (const auto& [p, v] : live) a.deallocate(p);
    EXPECT_EQ(a.stats().in_use, 0u);
    EXPECT_LE(a.stats().peak_in_use, a.stats().peak_reserved);
  }
  EXPECT_EQ(raw.outstanding(), 0u);
}
