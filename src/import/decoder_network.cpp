// SPDX-License-Identifier: Apache-2.0
#include "import/decoder_network.hpp"

#include <fmt/format.h>

#include "core/error.hpp"

namespace gpuvs::import {

models::NetworkInfo decoder_network(const models::DecoderConfig& c, const std::string& where, std::string description,
                                    const std::string& experts_key) {
  // Each size is in range; together they may not be (4,096 layers of 4,096 experts of 2^40 weights): held
  // to 2^48 parameters, as gpuvs's own model files are.
  std::int64_t params = 0;
  try {
    params = models::decoder_params(c);
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}: {}", where, e.what()));
  }
  if (params > (std::int64_t{1} << 48)) throw InputError(fmt::format("{}: the config's sizes make {} parameters, more than 2^48", where, params));
  // Each expert of each layer is an MLP of its own in the graph: 4,096 layers of 4,096 tiny experts were 16 M
  // MLPs, a graph no build finishes (fuzz_model_json, a timeout). Real MoE models have hundreds to thousands.
  if (constexpr std::int64_t kMaxExpertMlps = 1 << 14; std::int64_t{c.layers} * c.experts > kMaxExpertMlps)
    throw InputError(fmt::format("{}: {}: {} layers of {} experts are {} expert MLPs, more than {} (each is built)", where, experts_key, c.layers, c.experts,
                                 std::int64_t{c.layers} * c.experts, kMaxExpertMlps));
  models::NetworkInfo n;
  n.id = where;
  n.family = models::Family::decoder;
  n.sample_unit = "sequences";
  n.default_seq_len = c.seq_len;
  n.layers = c.layers;
  n.hidden = c.hidden;
  n.decoder = c;
  n.forward = [c](const models::NetworkOptions& o) { return models::build_decoder(o, c); };
  n.description = std::move(description);
  return n;
}

}  // namespace gpuvs::import
