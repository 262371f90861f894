// SPDX-License-Identifier: Apache-2.0
#include "engine/param_store.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>

#include "core/crc32c.hpp"
#include "core/rng.hpp"

namespace gpuvs::engine {

AlignedBuffer::AlignedBuffer(std::size_t bytes) : size_(bytes) {
  const std::size_t rounded = (bytes + 63) / 64 * 64;
  if (rounded == 0) return;
  void* p = std::aligned_alloc(64, rounded);
  if (p == nullptr) throw std::bad_alloc();
  std::memset(p, 0, rounded);
  ptr_.reset(static_cast<std::byte*>(p));
}

void AlignedBuffer::Free::operator()(std::byte* p) const { std::free(p); }

double HostTensor::at(std::size_t i) const {
  switch (dtype) {
    case ir::DType::f32: return as<float>()[i];
    case ir::DType::f64: return as<double>()[i];
    case ir::DType::i32: return as<std::int32_t>()[i];
    default: break;
  }
  throw std::invalid_argument(fmt::format("host tensor: dtype {} is not held on the host", ir::dtype_name(dtype)));
}

HostTensor& ParamStore::ensure(const std::string& name, const ir::Shape& shape, ir::DType dtype) {
  auto it = tensors_.find(name);
  if (it != tensors_.end()) {
    if (it->second.shape != shape || it->second.dtype != dtype)
      throw std::invalid_argument(fmt::format("param store: '{}' exists as {} {}, wanted {} {}", name,
                                              ir::shape_str(it->second.shape), ir::dtype_name(it->second.dtype),
                                              ir::shape_str(shape), ir::dtype_name(dtype)));
    return it->second;
  }
  HostTensor t;
  t.shape = shape;
  t.dtype = dtype;
  t.buffer = AlignedBuffer(static_cast<std::size_t>(ir::numel(shape)) * ir::dtype_size(dtype));
  return tensors_.emplace(name, std::move(t)).first->second;
}

HostTensor& ParamStore::get(const std::string& name) {
  auto it = tensors_.find(name);
  if (it == tensors_.end()) throw std::out_of_range(fmt::format("param store: no tensor '{}'", name));
  return it->second;
}

const HostTensor& ParamStore::get(const std::string& name) const {
  auto it = tensors_.find(name);
  if (it == tensors_.end()) throw std::out_of_range(fmt::format("param store: no tensor '{}'", name));
  return it->second;
}

std::size_t ParamStore::bytes() const {
  std::size_t n = 0;
  for (const auto& [_, t] : tensors_) n += t.bytes();
  return n;
}

void ParamStore::initialize(const std::vector<ir::ParamInit>& inits, ir::DType dtype, std::uint64_t seed) {
  for (const auto& init : inits) {
    HostTensor& t = ensure(init.name, init.shape, dtype);
    const auto n = static_cast<std::size_t>(ir::numel(init.shape));
    if (init.kind == ir::ParamInit::Kind::zeros) {
      std::memset(t.buffer.data(), 0, t.bytes());
      continue;
    }
    // Each param draws from its own stream (keyed by its name), so adding a layer leaves others unchanged.
    const CounterRng rng(seed, crc32c(init.name.data(), init.name.size()));
    const double limit = std::sqrt(6.0 / static_cast<double>(init.fan_in + init.fan_out));
    for (std::size_t i = 0; i < n; ++i) {
      const double u = (2.0 * rng.uniform(i) - 1.0) * limit;
      if (dtype == ir::DType::f32) t.as<float>()[i] = static_cast<float>(u);
      else t.as<double>()[i] = u;
    }
  }
}

}  // namespace gpuvs::engine
