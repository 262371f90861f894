// SPDX-License-Identifier: Apache-2.0
/* The peer for gpuvs's MPI all-reduce sweep (scripts/bench-mpi-vs-c): a plain C program that times
 * MPI_Allreduce on float sums at the sizes gpuvs sweeps, the same way (2 warm-up calls, then each timed call
 * between barriers, the slowest rank's time, the median; one untimed pass at the first size first), and
 * prints one line per size:
 *   bytes busbw_gbs time_us
 * It starts as gpuvs starts (every rank's command line gathered to rank 0, its verdict broadcast): in Open MPI
 * 4.1 one rooted collective (MPI_Gather, MPI_Gatherv or MPI_Bcast) leaves every later small all-reduce on
 * loopback ~0.15 us slower (8 B, 2 ranks: 0.64 -> 0.81 us; docs/PERFORMANCE.md), so a peer that skipped them
 * would time another MPI state. "fresh" skips them, to show that state.
 * Usage: mpirun -np N mpi_allreduce_peer [quick] [fresh]   (quick: sizes up to 4 MiB, as gpuvs bench --quick) */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int quick = 0, fresh = 0;
  for (int i = 1; i < argc; ++i) {
    quick |= strcmp(argv[i], "quick") == 0;
    fresh |= strcmp(argv[i], "fresh") == 0;
  }
  if (!fresh) { /* the job check gpuvs makes first: lengths and command lines gathered, a verdict broadcast */
    char line[64] = "mpi_allreduce_peer";
    int len = (int)strlen(line);
    int* lens = malloc(sizeof(int) * (size_t)size);
    int* offsets = malloc(sizeof(int) * (size_t)size);
    char* all = malloc((size_t)size * sizeof line);
    MPI_Gather(&len, 1, MPI_INT, lens, 1, MPI_INT, 0, MPI_COMM_WORLD);
    for (int r = 0; r < size; ++r) offsets[r] = r * (int)sizeof line;
    MPI_Gatherv(line, len, MPI_CHAR, all, lens, offsets, MPI_CHAR, 0, MPI_COMM_WORLD);
    long long verdict = 0;
    MPI_Bcast(&verdict, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
    free(lens);
    free(offsets);
    free(all);
  }
  const long long last = quick ? (4LL << 20) : (64LL << 20), unit = 4LL * size;
  /* pass 0: one untimed pass at the first size, as gpuvs makes before its sweep */
  for (long long b = 8, pass = 0; b <= last; b = pass++ == 0 ? b : b * 4) {
    const long long bytes = b < unit ? unit : (b + unit - 1) / unit * unit;
    const int count = (int)(bytes / 4);
    const int reps = bytes <= (64 << 10) ? (quick ? 20 : 50) : bytes <= (4 << 20) ? (quick ? 10 : 20) : 5;
    float* send = malloc((size_t)bytes);
    float* recv = malloc((size_t)bytes);
    for (int i = 0; i < count; ++i) send[i] = (float)((rank + 1) * (1 + i % 7));
    double* times = malloc(sizeof(double) * (size_t)reps);
    for (int it = -2; it < reps; ++it) {
      MPI_Barrier(MPI_COMM_WORLD);
      const double t0 = MPI_Wtime();
      MPI_Allreduce(send, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      double t = MPI_Wtime() - t0;
      MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      if (it >= 0) times[it] = t;
    }
    qsort(times, (size_t)reps, sizeof(double), cmp);
    const double med = reps % 2 ? times[reps / 2] : 0.5 * (times[reps / 2 - 1] + times[reps / 2]);
    const double busbw = (double)bytes / med / 1e9 * (size > 1 ? 2.0 * (size - 1) / size : 1.0);
    if (rank == 0 && pass > 0) printf("%lld %.6f %.3f\n", bytes, busbw, med * 1e6);
    free(send);
    free(recv);
    free(times);
  }
  MPI_Finalize();
  return 0;
}
