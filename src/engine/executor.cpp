// SPDX-License-Identifier: Apache-2.0
#include "engine/executor.hpp"

#include <omp.h>

extern "C" void openblas_set_num_threads(int num_threads);

namespace gpuvs::engine {

std::string_view gemm_library_name(GemmLibrary g) { return g == GemmLibrary::onednn ? "onednn" : "openblas"; }

void set_cpu_threads(int threads) {
  omp_set_num_threads(threads);  // oneDNN (OpenMP runtime in Debian's build) and our elementwise loops
  openblas_set_num_threads(threads);
}

int cpu_threads() { return omp_get_max_threads(); }

}  // namespace gpuvs::engine
