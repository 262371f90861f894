// SPDX-License-Identifier: Apache-2.0
// The training engine's NCCL groups: every GPU of this process (ncclCommInitAll), or one GPU per process
// joined by an id the host carried between them (ncclCommInitRank). Gradients are averaged (ncclAvg).
#include "core/error.hpp"
#include "gpu/cuda/collective.hpp"
#include "gpu/cuda/common.hpp"
#include "gpu/cuda/nccl_library.hpp"

namespace gpuvs::gpu::cuda {

namespace {

class NcclRank final : public Collective {
 public:
  NcclRank(ncclComm_t comm, int rank, int size) : comm_(comm), rank_(rank), size_(size) {}
  ~NcclRank() override { nccl().destroy(comm_); }
  void all_reduce_mean(float* buffer, std::int64_t count, cudaStream_t stream) override {
    nccl_check(nccl().all_reduce(buffer, buffer, static_cast<std::size_t>(count), ncclFloat, ncclAvg, comm_, stream), "ncclAllReduce");
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }

 private:
  ncclComm_t comm_;
  int rank_, size_;
};

}  // namespace

std::vector<std::unique_ptr<Collective>> make_collectives(int n) {
  const NcclLibrary& lib = nccl_for("multi-GPU training");
  std::vector<ncclComm_t> comms(static_cast<std::size_t>(n));
  std::vector<int> devs(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) devs[static_cast<std::size_t>(i)] = i;
  const ncclResult_t r = lib.init_all(comms.data(), n, devs.data());
  if (r != ncclSuccess) throw RuntimeFailure(std::string("ncclCommInitAll: ") + lib.error_string(r));
  std::vector<std::unique_ptr<Collective>> out;
  for (int i = 0; i < n; ++i) out.push_back(std::make_unique<NcclRank>(comms[static_cast<std::size_t>(i)], i, n));
  return out;
}

std::string nccl_unique_id() {
  const NcclLibrary& lib = nccl_for("GPUs across MPI ranks");
  ncclUniqueId id;
  const ncclResult_t r = lib.get_unique_id(&id);
  if (r != ncclSuccess) throw RuntimeFailure(std::string("ncclGetUniqueId: ") + lib.error_string(r));
  return std::string(id.internal, sizeof id.internal);
}

std::unique_ptr<Collective> make_group_collective(const std::string& unique_id, int rank, int size) {
  return std::make_unique<NcclRank>(join_group(unique_id, rank, size), rank, size);
}

}  // namespace gpuvs::gpu::cuda
