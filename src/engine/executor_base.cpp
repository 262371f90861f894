// SPDX-License-Identifier: Apache-2.0
// The Executor base class's training-epoch defaults (bound row order, running totals): the synchronous
// path every backend falls back to. Compiled into the engine and into the CUDA plugin, whose executors
// derive from Executor across the dlopen boundary.
#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <stdexcept>

#include "engine/data.hpp"
#include "engine/executor.hpp"

namespace gpuvs::engine {

StepTotals& StepTotals::operator+=(const StepTotals& o) {
  loss += o.loss;
  accuracy += o.accuracy;
  rows += o.rows;
  steps += o.steps;
  if (o.first_nonfinite_iteration >= 0 &&
      (first_nonfinite_iteration < 0 || o.first_nonfinite_iteration < first_nonfinite_iteration)) {
    first_nonfinite_iteration = o.first_nonfinite_iteration;
    nonfinite_loss = o.nonfinite_loss;
  }
  return *this;
}

void load_rows(Executor& ex, const Dataset& data, const std::int64_t* rows, std::int64_t count) {
  if (ex.gather_rows(data, rows, count)) return;
  auto* x = static_cast<float*>(ex.input("x"));
  auto* y = static_cast<std::int32_t*>(ex.input("labels"));
  const auto f = static_cast<std::size_t>(data.features);
  for (std::int64_t i = 0; i < count; ++i) {
    const auto r = static_cast<std::size_t>(rows[i]);
    std::memcpy(x + static_cast<std::size_t>(i) * f, data.x.data() + r * f, f * sizeof(float));
    y[i] = data.y[r];
  }
}

bool Executor::bind_epoch(const Dataset& data, const std::int64_t* order, std::int64_t count, std::int64_t offset,
                          std::int64_t stride, const StepContext& first) {
  (void)first;
  binding_ = {};
  const ir::Graph& g = graph();
  const ir::NodeId x = g.find("x"), y = g.find("labels");
  if (x == ir::kNone || y == ir::kNone) return false;
  const ir::Node& xn = g.node(x);
  if (xn.shape.size() != 2 || xn.shape[1] != data.features || g.node(y).shape != ir::Shape{xn.shape[0]}) return false;
  if (offset < 0 || stride < 0 || offset > count) throw std::invalid_argument("bind_epoch: offset/stride outside the order");
  binding_ = {&data, order, count, offset, stride, 0};
  return true;
}

void Executor::run_accumulate(const StepContext& ctx, std::int64_t rows) {
  if (binding_.data) {
    const std::int64_t first = binding_.offset + binding_.cursor;
    if (first + rows > binding_.count)
      throw std::logic_error(fmt::format("run_accumulate: rows {}..{} are past the epoch's {} rows", first, first + rows, binding_.count));
    load_rows(*this, *binding_.data, binding_.order + first, rows);
    binding_.cursor += binding_.stride;
  }
  run(ctx);
  const double loss = scalar("loss");
  const double acc = graph().output("accuracy") == ir::kNone ? 0.0 : scalar("accuracy");
  if (!std::isfinite(loss) && host_totals_.first_nonfinite_iteration < 0) {
    host_totals_.first_nonfinite_iteration = ctx.iteration;
    host_totals_.nonfinite_loss = loss;
  }
  const auto r = static_cast<double>(rows);
  host_totals_.loss += loss * r;
  host_totals_.accuracy += acc * r;
  host_totals_.rows += rows;
  ++host_totals_.steps;
}

StepTotals Executor::totals() { return host_totals_; }

void Executor::reset_totals() { host_totals_ = {}; }

}  // namespace gpuvs::engine
