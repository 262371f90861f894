// SPDX-License-Identifier: Apache-2.0
#include "dist/world.hpp"

#include <fmt/format.h>
#include <mpi.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <thread>

#include "core/error.hpp"
#include "core/strings.hpp"
#include "core/stats.hpp"

namespace gpuvs::dist {

namespace {

World g_world;
bool g_initialised = false;

/// GPUVS_COLLECTIVE_TIMEOUT_S, or 120 s when unset. A value that is no time in (0 s, a week] is refused on every
/// rank (exit 2) rather than ignored or overflowing the deadline arithmetic.
double timeout_s() {
  const char* t = std::getenv("GPUVS_COLLECTIVE_TIMEOUT_S");
  if (t == nullptr || *t == '\0') return 120.0;
  char* end = nullptr;
  const double v = std::strtod(t, &end);
  if (end == t || *end != '\0' || !(v > 0 && v <= 604800.0)) {
    // Before MPI_Init no rank knows its number but from its launcher: rank 0 (or a lone process) says it.
    const char* rank = nullptr;
    for (const char* var : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"})
      if (!rank) rank = std::getenv(var);
    if (rank == nullptr || std::string(rank) == "0")
      std::fprintf(stderr, "gpuvs: error: GPUVS_COLLECTIVE_TIMEOUT_S='%s' is not a time in seconds above 0 and at most 604800 (a week)\n",
                   strings::printable(t).c_str());
    std::exit(2);
  }
  return v;
}

bool launched_by_mpi() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE", "MPI_LOCALNRANKS"})
    if (std::getenv(v)) return true;
  return false;
}

/// An environment variable that holds a whole number from 0 to 2^20, or -1.
long env_count(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return -1;
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  return (*end == '\0' && n >= 0 && n <= (1L << 20)) ? n : -1;
}

// Deadlines: a watchdog thread watches the collective this rank is in (the collectives themselves are MPI's
// blocking ones, its tuned algorithms: the non-blocking forms run slower generic schedules). Past the
// deadline it says which collective waited how long, and ends this process; the launcher then ends the job.
std::atomic<std::int64_t> g_deadline_ns{0};
std::atomic<const char*> g_what{nullptr};
std::atomic<double> g_limit{120.0};
std::thread g_watchdog;
std::atomic<bool> g_stop{false};

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void watch() {
  while (!g_stop.load()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const std::int64_t d = g_deadline_ns.load();
    if (d != 0 && now_ns() > d) {
      const std::string who = rank_label().empty() ? "a rank on " + g_world.host : rank_label();  // before MPI_Init returned
      std::fprintf(stderr, "gpuvs: error: %s: the collective '%s' waited %.0f s for the other ranks (GPUVS_COLLECTIVE_TIMEOUT_S): one failed or hangs\n",
                   who.c_str(), g_what.load() ? g_what.load() : "?", g_limit.load());
      std::fflush(stderr);
      std::_Exit(1);
    }
  }
}

/// Marks this rank as inside the collective `what` until it leaves the scope.
struct InCollective {
  explicit InCollective(const char* what) {
    g_what = what;
    g_deadline_ns = now_ns() + static_cast<std::int64_t>(g_limit.load() * 1e9);
  }
  ~InCollective() { g_deadline_ns = 0; }
  InCollective(const InCollective&) = delete;
  InCollective& operator=(const InCollective&) = delete;
};

void check(int rc, const char* what) {
  if (rc != MPI_SUCCESS) {
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    fail_job(fmt::format("MPI {} failed: {}", what, std::string(msg, static_cast<std::size_t>(len))), 1);
  }
}

}  // namespace

void init(int& argc, char**& argv) {
  g_initialised = true;
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  g_world.host = host;
  g_world.node_of_rank = {0};
  if (!launched_by_mpi()) return;
  // The watchdog starts first: a rank stopped while the job starts up must not hang the others in MPI_Init
  // or the collectives after it (found under load: a rank stopped 2 s after launch, before training began).
  g_limit = timeout_s();
  g_watchdog = std::thread(watch);
  std::optional<InCollective> starting(std::in_place, "start-up (MPI_Init)");
  // Only the main thread ever calls MPI (the watchdog, compute and GPU threads never do). Open MPI 4.1 turns
  // on its internal locking for any level above MPI_THREAD_SINGLE (ompi_mpi_init: opal_set_using_threads),
  // which cost 0.15-0.3 us per small all-reduce here (docs/PERFORMANCE.md), so gpuvs asks for SINGLE, as the
  // plain C programs it is measured against do.
  int provided = 0;
  if (MPI_Init_thread(&argc, &argv, MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS) {
    std::fprintf(stderr, "gpuvs: error: MPI_Init failed (launched by mpirun or srun?)\n");
    g_stop = true;
    g_watchdog.join();
    std::exit(1);
  }
  g_world.mpi = true;
  // Errors come back as codes: a failing call fails the job with its message, never an MPI abort banner alone.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_world.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_world.size);
  starting.emplace("start-up (finding the nodes)");
  MPI_Comm local;
  check(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, g_world.rank, MPI_INFO_NULL, &local), "Comm_split_type");
  MPI_Comm_rank(local, &g_world.local_rank);
  MPI_Comm_size(local, &g_world.local_size);
  // A node is named by its lowest world rank; nodes are numbered in that order.
  int leader = g_world.rank;
  check(MPI_Allreduce(MPI_IN_PLACE, &leader, 1, MPI_INT, MPI_MIN, local), "Allreduce (node leader)");
  MPI_Comm_free(&local);
  std::vector<int> leaders(static_cast<std::size_t>(g_world.size));
  check(MPI_Allgather(&leader, 1, MPI_INT, leaders.data(), 1, MPI_INT, MPI_COMM_WORLD), "Allgather (node leaders)");
  std::vector<int> distinct = leaders;
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  g_world.nodes = static_cast<int>(distinct.size());
  g_world.node_of_rank.clear();
  for (int l : leaders) g_world.node_of_rank.push_back(static_cast<int>(std::lower_bound(distinct.begin(), distinct.end(), l) - distinct.begin()));
  g_world.node = g_world.node_of_rank[static_cast<std::size_t>(g_world.rank)];
}

std::string foreign_launch(bool* rank0) {
  if (launched_by_mpi()) return {};
  const bool torch = std::getenv("TORCHELASTIC_RUN_ID") || std::getenv("MASTER_ADDR") || std::getenv("WORLD_SIZE");
  const long size = env_count("WORLD_SIZE"), rank = env_count("RANK");
  if (!torch || size <= 1) return {};
  if (rank0) *rank0 = rank <= 0;
  return fmt::format("torchrun (RANK={} of WORLD_SIZE={})", rank < 0 ? std::string("?") : std::to_string(rank), size);
}

void finalize() {
  g_stop = true;
  if (g_watchdog.joinable()) g_watchdog.join();
  if (g_world.mpi) {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Finalize();
  }
}

const World& world() {
  if (!g_initialised) {  // library users (tests) that never called init: a world of one
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    g_world.host = host;
    g_world.node_of_rank = {0};
    g_initialised = true;
  }
  return g_world;
}

std::string rank_label() {
  const World& w = world();
  return w.size > 1 ? fmt::format("rank {} of {} ({})", w.rank, w.size, w.host) : std::string();
}

void fail_job(const std::string& line, int exit_code) {
  const World& w = world();
  if (!w.mpi || w.size == 1) {
    if (w.mpi) std::fprintf(stderr, "gpuvs: error: %s\n", line.c_str());
    if (w.mpi) {
      finalize();  // joins the watchdog too
      std::exit(exit_code);
    }
    return;
  }
  std::fprintf(stderr, "gpuvs: error: %s: %s\n", rank_label().c_str(), line.c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, exit_code);
  std::_Exit(exit_code);
}

void check_same(const std::string& value, const std::string& verb, const std::string& advice) {
  const World& w = world();
  if (w.size == 1) return;
  const std::vector<std::string> all = gather(value, "check the job");
  std::string verdict;
  if (w.rank == 0)
    for (std::size_t r = 1; r < all.size(); ++r)
      if (all[r] != all[0]) {
        verdict = fmt::format("rank {} {} '{}' but rank 0 {} '{}': {}", r, verb, strings::printable(all[r], 200), verb,
                              strings::printable(all[0], 200), advice);
        break;
      }
  verdict = broadcast(verdict, "check the job");
  if (!verdict.empty()) throw JobError(verdict);
}

void check_same_job(const std::string& fingerprint) {
  check_same(fingerprint, "runs", "launch the same gpuvs build with the same command on every rank");
}

Deadline::Deadline(const char* what) {
  if (world().size == 1) return;
  armed_ = true;
  g_what = what;
  g_deadline_ns = now_ns() + static_cast<std::int64_t>(g_limit.load() * 1e9);
}

Deadline::~Deadline() {
  if (armed_) g_deadline_ns = 0;
}

void barrier(const char* what) {
  if (world().size == 1) return;
  const InCollective guard(what);
  check(MPI_Barrier(MPI_COMM_WORLD), what);
}

namespace {
template <typename T>
void allreduce(T* data, std::int64_t n, MPI_Datatype type, const char* what) {
  if (world().size == 1 || n == 0) return;
  const InCollective guard(what);
  // Chunks of at most 2^30 elements: MPI counts are ints.
  for (std::int64_t done = 0; done < n;) {
    const auto part = static_cast<int>(std::min<std::int64_t>(n - done, std::int64_t{1} << 30));
    check(MPI_Allreduce(MPI_IN_PLACE, data + done, part, type, MPI_SUM, MPI_COMM_WORLD), what);
    done += part;
  }
}
}  // namespace

void allreduce_sum(float* data, std::int64_t n, const char* what) { allreduce(data, n, MPI_FLOAT, what); }
void allreduce_sum(double* data, std::int64_t n, const char* what) { allreduce(data, n, MPI_DOUBLE, what); }

std::string broadcast(const std::string& bytes, const char* what) {
  if (world().size == 1) return bytes;
  const InCollective guard(what);
  long long len = static_cast<long long>(bytes.size());
  check(MPI_Bcast(&len, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD), what);
  std::string out = world().rank == 0 ? bytes : std::string(static_cast<std::size_t>(len), '\0');
  if (len > 0) check(MPI_Bcast(out.data(), static_cast<int>(len), MPI_CHAR, 0, MPI_COMM_WORLD), what);
  return out;
}

std::vector<std::string> gather(const std::string& bytes, const char* what) {
  const World& w = world();
  if (w.size == 1) return {bytes};
  const InCollective guard(what);
  int len = static_cast<int>(bytes.size());
  std::vector<int> lens(static_cast<std::size_t>(w.size));
  check(MPI_Gather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, 0, MPI_COMM_WORLD), what);
  std::vector<int> offsets(lens.size(), 0);
  int total = 0;
  for (std::size_t r = 0; r < lens.size(); ++r) {
    offsets[r] = total;
    total += w.rank == 0 ? lens[r] : 0;
  }
  std::string all(static_cast<std::size_t>(total), '\0');
  check(MPI_Gatherv(bytes.data(), len, MPI_CHAR, all.data(), lens.data(), offsets.data(), MPI_CHAR, 0, MPI_COMM_WORLD), what);
  std::vector<std::string> out;
  if (w.rank == 0)
    for (std::size_t r = 0; r < lens.size(); ++r) out.push_back(all.substr(static_cast<std::size_t>(offsets[r]), static_cast<std::size_t>(lens[r])));
  return out;
}

std::vector<double> time_collective(Collective c, const std::vector<float>& send, std::vector<float>& recv, int warmup, int iterations) {
  const World& w = world();
  const auto n = static_cast<int>(send.size());
  const int per_rank = n / std::max(1, w.size);
  recv.assign(c == Collective::reduce_scatter ? static_cast<std::size_t>(per_rank) : send.size(), 0.0f);
  std::vector<double> times;
  // One deadline for the whole measurement, and nothing between the barrier and the clock but the call:
  // each rank's bookkeeping there would skew the ranks' starts, which small sizes would time.
  const InCollective guard("benchmark collective");
  for (int it = -warmup; it < iterations; ++it) {
    if (w.size > 1) check(MPI_Barrier(MPI_COMM_WORLD), "benchmark step");
    const auto t0 = std::chrono::steady_clock::now();
    switch (c) {
      case Collective::allreduce:
        check(MPI_Allreduce(send.data(), recv.data(), n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD), "benchmark all-reduce");
        break;
      case Collective::allgather:  // each rank's slice of the buffer, gathered whole on every rank
        check(MPI_Allgather(send.data() + static_cast<std::ptrdiff_t>(w.rank) * per_rank, per_rank, MPI_FLOAT, recv.data(), per_rank, MPI_FLOAT,
                            MPI_COMM_WORLD),
              "benchmark all-gather");
        break;
      case Collective::reduce_scatter:
        check(MPI_Reduce_scatter_block(send.data(), recv.data(), per_rank, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD), "benchmark reduce-scatter");
        break;
    }
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (w.size > 1) check(MPI_Allreduce(MPI_IN_PLACE, &s, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD), "benchmark timing");  // the slowest rank's
    if (it >= 0) times.push_back(s);
  }
  return times;
}

double time_send_recv(int a, int b, std::int64_t bytes, int iterations) {
  const World& w = world();
  std::vector<char> buf(static_cast<std::size_t>(bytes), static_cast<char>(w.rank));
  std::vector<double> times;
  barrier("point-to-point start");
  if (w.rank == a || w.rank == b) {
    const int peer = w.rank == a ? b : a;
    const InCollective guard("send/recv between a pair");
    for (int it = -1; it < iterations; ++it) {
      const auto t0 = std::chrono::steady_clock::now();
      if (w.rank == a) {
        check(MPI_Send(buf.data(), static_cast<int>(bytes), MPI_CHAR, peer, 7, MPI_COMM_WORLD), "send");
        check(MPI_Recv(buf.data(), static_cast<int>(bytes), MPI_CHAR, peer, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "receive");
      } else {
        check(MPI_Recv(buf.data(), static_cast<int>(bytes), MPI_CHAR, peer, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "receive");
        check(MPI_Send(buf.data(), static_cast<int>(bytes), MPI_CHAR, peer, 8, MPI_COMM_WORLD), "send");
      }
      if (it >= 0) times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / 2);
    }
  }
  double t = times.empty() ? 0.0 : stats::median(times);
  barrier("point-to-point end");
  return t;
}

}  // namespace gpuvs::dist
