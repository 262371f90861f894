// SPDX-License-Identifier: Apache-2.0
#include "engine/fit_check.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.hpp"
#include "core/units.hpp"
#include "engine/executor.hpp"
#include "models/builder.hpp"

namespace gpuvs::engine {

TrainFootprint training_footprint(const models::ModelSpec& spec, std::int64_t batch, std::int64_t train_rows, std::int64_t val_batch,
                                  std::int64_t val_rows) {
  TrainFootprint f;
  for (const auto& init : models::param_inits(spec)) f.params += static_cast<double>(ir::numel(init.shape)) * 4.0;
  f.adam = 2.0 * f.params;
  const auto arena = [&](std::int64_t rows, models::Mode mode) {
    return static_cast<double>(cpu_workspace_bytes(models::build_graph(spec, {rows, ir::DType::f32, mode})));
  };
  f.work = arena(std::min(batch, train_rows), models::Mode::train);
  if (const std::int64_t tail = train_rows % batch; tail > 0 && train_rows > batch) f.work += arena(tail, models::Mode::train);
  if (val_rows > 0) f.work += arena(std::min(val_batch, val_rows), models::Mode::eval);
  return f;
}

double usable_gpu_bytes(std::uint64_t free, std::uint64_t total, bool preallocate, double fraction) {
  const double f = static_cast<double>(free);
  return preallocate ? std::min(f, fraction * static_cast<double>(total)) : f;
}

void refuse_unless_fits(const std::string& model, std::int64_t batch, const TrainFootprint& f, double have, const std::string& where,
                        const std::string& have_what) {
  if (f.total() <= have) return;
  const double gib = units::kGiB;
  throw InputError(fmt::format("model '{}' needs {:.2f} GiB to train at batch {} (parameters {:.2f}, Adam state {:.2f}, activations "
                               "and gradients {:.2f}) but {} has {:.2f} GiB {}: lower --batch-size or the model's size",
                               model, f.total() / gib, batch, f.params / gib, f.adam / gib, f.work / gib, where, have / gib, have_what));
}

}  // namespace gpuvs::engine
