// A measurement typed on the command line, for a figure no file holds:
//   --measured 'gpu=rtx-3090;workload=llama3-8b;mode=decode;precision=q4_k_m;value=112 tokens/s'
// Keys: gpu, workload, mode and value (required); precision (a gpuvs precision or weight format), prompt_len,
// gen_len, batch, gpus, framework, spread (the figure's standard deviation, in its unit). Names are kept as
// typed: which card, workload and precision they are is resolved by the command that uses them.
#pragma once
#include <string>

#include "measured/measurement.hpp"

namespace gpuvs::measured {

/// The measurement `spec` states. InputError "--measured: ..." naming the key for an unknown or repeated key, a
/// missing one, a mode gpuvs does not price, or a value that is not a positive number with a known unit.
Measurement read_measured_spec(const std::string& spec);

/// True when `text` reads as a spec rather than a file name (it holds '=').
bool looks_like_spec(const std::string& text);

}  // namespace gpuvs::measured
