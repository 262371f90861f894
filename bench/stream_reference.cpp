// SPDX-License-Identifier: Apache-2.0
// Reference for `gpuvs bench`'s STREAM triad: the plain OpenMP loop (McCalpin's kernel, doubles), built
// with -O3 -march=native like STREAM itself, at a size given on the command line. Prints the median GB/s
// of 10 timed runs after a warm-up (STREAM byte counting: 24 bytes per element), and checks the result.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

int main(int argc, char** argv) {
  const long n = argc > 1 ? std::atol(argv[1]) : 1L << 27;
  std::vector<double> a(static_cast<std::size_t>(n)), b(static_cast<std::size_t>(n)), c(static_cast<std::size_t>(n));
#pragma omp parallel for
  for (long j = 0; j < n; ++j) {
    a[static_cast<std::size_t>(j)] = 1.0;
    b[static_cast<std::size_t>(j)] = 2.0 + static_cast<double>(j % 7);
    c[static_cast<std::size_t>(j)] = 0.5 + static_cast<double>(j % 5);
  }
  const double s = 3.0;
  double* pa = a.data();
  const double* pb = b.data();
  const double* pc = c.data();
  std::vector<double> rates;
  for (int r = 0; r < 11; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
#pragma omp parallel for simd
    for (long j = 0; j < n; ++j) pa[j] = pb[j] + s * pc[j];
    const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (r > 0) rates.push_back(24.0 * static_cast<double>(n) / t / 1e9);
  }
  for (long j = 0; j < n; j += n / 101 + 1)
    if (std::fabs(pa[j] - (pb[j] + s * pc[j])) > 1e-12) {
      std::printf("FAILED at %ld\n", j);
      return 1;
    }
  std::sort(rates.begin(), rates.end());
  std::printf("%.3f\n", rates[rates.size() / 2]);
  return 0;
}
