// SPDX-License-Identifier: Apache-2.0
// Persistent tensors of a model: params and optimizer slots, held on the host, shared by every executor
// built for the model (training step, evaluation, tail batch) and written to checkpoints.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ir/ir.hpp"
#include "ir/param_init.hpp"

namespace gpuvs::engine {

/// 64-byte aligned, zero-initialised bytes (one cache line, one AVX-512 vector).
class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  explicit AlignedBuffer(std::size_t bytes);
  std::byte* data() const { return ptr_.get(); }
  std::size_t size() const { return size_; }

 private:
  struct Free {
    void operator()(std::byte* p) const;
  };
  std::unique_ptr<std::byte[], Free> ptr_;
  std::size_t size_ = 0;
};

struct HostTensor {
  ir::Shape shape;
  ir::DType dtype = ir::DType::f32;
  AlignedBuffer buffer;
  std::size_t bytes() const { return buffer.size(); }
  template <class T>
  T* as() const { return reinterpret_cast<T*>(buffer.data()); }
  /// Element i converted to double (f32/f64/i32).
  double at(std::size_t i) const;
};

class ParamStore {
 public:
  /// Creates a zeroed tensor, or returns the existing one (which must match shape and dtype).
  HostTensor& ensure(const std::string& name, const ir::Shape& shape, ir::DType dtype);
  HostTensor& get(const std::string& name);
  const HostTensor& get(const std::string& name) const;
  bool has(const std::string& name) const { return tensors_.count(name) != 0; }
  const std::map<std::string, HostTensor>& tensors() const { return tensors_; }
  std::size_t bytes() const;

  /// Keras initialisation (glorot_uniform kernels, zero biases), reproducible from `seed`.
  void initialize(const std::vector<ir::ParamInit>& inits, ir::DType dtype, std::uint64_t seed);

  /// Optimizer steps taken so far (Keras `optimizer.iterations`).
  std::int64_t iterations = 0;

 private:
  std::map<std::string, HostTensor> tensors_;
};

}  // namespace gpuvs::engine
