// SPDX-License-Identifier: Apache-2.0
// The processes of one gpuvs job: a single process, or every rank of an MPI launch (`mpirun -np N gpuvs ...`,
// `srun gpuvs ...`). gpuvs has no transport of its own: MPI starts the ranks, tells each its node (ranks that
// share memory, MPI_COMM_TYPE_SHARED) and carries the collectives.
//
// Failure contract: every collective has a deadline (GPUVS_COLLECTIVE_TIMEOUT_S, default 120 s, measured from
// when this rank entered it). A rank that fails prints one line "gpuvs: error: rank R of N (HOST): CAUSE" and
// aborts the job (MPI_Abort with the error's exit code), so no rank waits on it; a rank whose collective passes
// its deadline says which collective and how long it waited, and aborts the same way.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace gpuvs::dist {

struct World {
  int rank = 0, size = 1;              // in the job
  int local_rank = 0, local_size = 1;  // on this node
  int node = 0, nodes = 1;             // nodes numbered by their lowest rank's order
  std::string host;                    // this rank's host name
  bool mpi = false;                    // launched under MPI (size may still be 1)
  std::vector<int> node_of_rank;       // every rank's node
};

/// Starts MPI when a launcher started this process (it set PMIx, PMI or Open MPI's rank variables), else a
/// world of one. Called once by main, before the command runs.
void init(int& argc, char**& argv);
/// A launch by a launcher gpuvs cannot join (torchrun / torch.distributed.run: RANK, WORLD_SIZE, MASTER_ADDR or
/// TORCHELASTIC_RUN_ID set, more than one process, and no MPI launcher's variables), described with this
/// process's rank and the world size ("torchrun (RANK=1 of WORLD_SIZE=4)"); empty otherwise. Such processes know
/// nothing of each other: run as a world of one each, a job's commands would repeat the same work and write the
/// same outputs N times. `rank0` is set when this process is the launch's rank 0 (the one that says so).
std::string foreign_launch(bool* rank0 = nullptr);
/// Ends MPI (every rank calls it on a normal exit).
void finalize();
const World& world();
/// "rank 2 of 4 (node17)"; "" for a single process.
std::string rank_label();

/// The job fails: print `line` (prefixed with this rank) and abort every rank with `exit_code`. Returns only
/// when this is a single process (then the caller exits as usual).
void fail_job(const std::string& line, int exit_code);

/// Checks that every rank runs the same build and command (`fingerprint`): InputError on every rank naming the
/// first rank that differs (a launch that mixes binaries or arguments).
void check_same_job(const std::string& fingerprint);

/// Checks that every rank holds the same `value`: JobError on every rank, "rank R VERB 'V' but rank 0 VERB 'W':
/// ADVICE", naming the first rank that differs. Nothing in a world of one.
void check_same(const std::string& value, const std::string& verb, const std::string& advice);

/// The same deadline for work outside MPI that waits on the other ranks (NCCL on a GPU: a rank that hangs
/// there would hang the others inside NCCL, where MPI's deadlines do not reach). While one is alive, a wait
/// past GPUVS_COLLECTIVE_TIMEOUT_S prints "WHAT waited N s for the other ranks" and ends the job. Nothing in
/// a world of one. Not nested in a collective (it stands for one).
class Deadline {
 public:
  explicit Deadline(const char* what);
  ~Deadline();
  Deadline(const Deadline&) = delete;
  Deadline& operator=(const Deadline&) = delete;

 private:
  bool armed_ = false;
};

// ---- Collectives over every rank (each a no-op, or a copy, in a world of one). Deadlines as above. ----
void barrier(const char* what);
/// In-place sum over ranks.
void allreduce_sum(float* data, std::int64_t n, const char* what);
void allreduce_sum(double* data, std::int64_t n, const char* what);
/// Rank 0's bytes on every rank.
std::string broadcast(const std::string& bytes, const char* what);
/// Every rank's bytes, in rank order, on rank 0 (empty elsewhere).
std::vector<std::string> gather(const std::string& bytes, const char* what);

// ---- What the collectives benchmark measures (bench/cluster_benchmarks.cpp). ----
enum class Collective { allreduce, allgather, reduce_scatter };
/// Runs `iterations` of the collective on `count` floats per rank (allgather/reduce_scatter: count is the
/// whole buffer, split evenly over ranks) after `warmup` ones; returns each timed iteration's seconds (the
/// slowest rank's, as nccl-tests reports) and leaves the last result in `recv` for checking.
std::vector<double> time_collective(Collective c, const std::vector<float>& send, std::vector<float>& recv, int warmup, int iterations);
/// Seconds per one-way send of `bytes` from rank `a` to rank `b` (a ping-pong's half, median of `iterations`);
/// every rank calls it, the pair measures, the others wait at the end.
double time_send_recv(int a, int b, std::int64_t bytes, int iterations);

}  // namespace gpuvs::dist
