// SPDX-License-Identifier: Apache-2.0
#include "engine/memory/caching_allocator.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <stdexcept>

#include "core/error.hpp"

namespace gpuvs::engine {

namespace {

std::size_t round_up(std::size_t v, std::size_t to) { return (v + to - 1) / to * to; }

std::string mib(std::size_t b) { return fmt::format("{:.1f} MiB", static_cast<double>(b) / 1048576.0); }

}  // namespace

void* HostRawAllocator::allocate(std::size_t bytes) {
  if (outstanding_ + bytes > capacity_) return nullptr;
  void* p = std::aligned_alloc(256, round_up(bytes, 256));
  if (p) outstanding_ += bytes;
  return p;
}

void HostRawAllocator::deallocate(void* p, std::size_t bytes) {
  std::free(p);
  outstanding_ -= bytes;
}

std::string alloc_mode_name(AllocMode m) { return m == AllocMode::growth ? "growth" : "preallocate"; }

CachingAllocator::CachingAllocator(RawAllocator& raw, AllocMode mode, double fraction) : raw_(raw), mode_(mode) {
  if (mode == AllocMode::preallocate) {
    if (!(fraction > 0 && fraction <= 1)) throw InputError(fmt::format("--memory preallocate={}: the fraction must be in (0, 1]", fraction));
    const auto bytes = static_cast<std::size_t>(static_cast<double>(raw.capacity()) * fraction) / kAlignment * kAlignment;
    if (bytes < kAlignment || !new_segment(bytes))
      throw RuntimeFailure(fmt::format("cannot preallocate {} ({:.0f}% of {} on {})", mib(bytes), 100 * fraction, mib(raw.capacity()),
                                       raw.name()));
  }
}

CachingAllocator::~CachingAllocator() {
  for (const auto& s : segments_)
    if (s.base) raw_.deallocate(s.base, s.size);
}

CachingAllocator::Block* CachingAllocator::new_segment(std::size_t bytes) {
  ++stats_.device_calls;
  char* base = static_cast<char*>(raw_.allocate(bytes));
  if (!base) return nullptr;
  Block* b = make_block({base, bytes, true, nullptr, nullptr, segments_.size()});
  segments_.push_back({base, bytes, b});
  ++stats_.segments;
  stats_.reserved += bytes;
  stats_.peak_reserved = std::max(stats_.peak_reserved, stats_.reserved);
  insert_free(b);
  return b;
}

void CachingAllocator::insert_free(Block* b) {
  b->free = true;
  free_.emplace(b->size, b);
}

void CachingAllocator::erase_free(Block* b) {
  auto [lo, hi] = free_.equal_range(b->size);
  for (auto it = lo; it != hi; ++it)
    if (it->second == b) {
      free_.erase(it);
      return;
    }
  throw std::logic_error("allocator: free block missing from the free list");
}

CachingAllocator::Block* CachingAllocator::make_block(const Block& v) {
  if (!spare_.empty()) {
    Block* b = spare_.back();
    spare_.pop_back();
    *b = v;
    return b;
  }
  blocks_.push_back(std::make_unique<Block>(v));
  return blocks_.back().get();
}

std::size_t CachingAllocator::largest_free_block() const { return free_.empty() ? 0 : free_.rbegin()->first; }

void* CachingAllocator::allocate(std::size_t bytes) {
  if (void* p = try_allocate(bytes)) return p;
  const std::size_t size = round_up(bytes, kAlignment);
  throw RuntimeFailure(fmt::format("out of memory on {} ({} pool): asked {}, reserved {}, in use {}, largest free block {}", raw_.name(),
                                   alloc_mode_name(mode_), mib(size), mib(stats_.reserved), mib(stats_.in_use), mib(largest_free_block())));
}

void* CachingAllocator::try_allocate(std::size_t bytes) {
  if (bytes == 0) throw std::invalid_argument("allocator: zero-byte request");
  const std::size_t size = round_up(bytes, kAlignment);
  auto it = free_.lower_bound(size);
  Block* b = nullptr;
  if (it != free_.end()) {
    b = it->second;
    free_.erase(it);
    ++stats_.cache_hits;
  } else if (mode_ == AllocMode::growth) {
    b = new_segment(round_up(size, kSegment));
    if (!b) {
      // The device is full: give back cached segments and try once more before failing.
      release_cached();
      b = new_segment(round_up(size, kSegment));
    }
    if (b) erase_free(b);
  }
  if (!b) return nullptr;
  b->free = false;
  if (b->size - size >= kAlignment) {  // split: the tail stays free, next to its neighbours
    Block* tail = make_block({b->ptr + size, b->size - size, true, b, b->next, b->segment});
    if (b->next) b->next->prev = tail;
    b->next = tail;
    b->size = size;
    insert_free(tail);
  }
  live_.emplace(b->ptr, b);
  ++stats_.allocations;
  stats_.in_use += b->size;
  stats_.peak_in_use = std::max(stats_.peak_in_use, stats_.in_use);
  return b->ptr;
}

void CachingAllocator::deallocate(void* p) {
  auto it = live_.find(static_cast<char*>(p));
  if (it == live_.end()) throw std::logic_error("allocator: freeing a pointer it did not hand out");
  Block* b = it->second;
  live_.erase(it);
  ++stats_.frees;
  stats_.in_use -= b->size;
  // Coalesce with free neighbours so a freed region can serve a larger request later.
  if (b->next && b->next->free) {
    Block* n = b->next;
    erase_free(n);
    b->size += n->size;
    b->next = n->next;
    if (n->next) n->next->prev = b;
    spare_.push_back(n);  // retired record, reused by the next split
  }
  if (b->prev && b->prev->free) {
    Block* pv = b->prev;
    erase_free(pv);
    pv->size += b->size;
    pv->next = b->next;
    if (b->next) b->next->prev = pv;
    spare_.push_back(b);
    b = pv;
  }
  insert_free(b);
}

void CachingAllocator::release_cached() {
  if (mode_ != AllocMode::growth) return;
  for (auto& s : segments_) {
    if (!s.base) continue;
    // Wholly free: its first block is free and spans the segment.
    Block* first = s.first;  // never retired: it has no lower neighbour to merge into
    if (!first->free || first->size != s.size) continue;
    erase_free(first);
    spare_.push_back(first);
    raw_.deallocate(s.base, s.size);
    stats_.reserved -= s.size;
    --stats_.segments;
    s.base = nullptr;
  }
}

}  // namespace gpuvs::engine
