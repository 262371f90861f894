// SPDX-License-Identifier: Apache-2.0
#include "gpu/cuda/nccl_library.hpp"

#include <dlfcn.h>

#include <cstring>
#include <type_traits>

#include "core/error.hpp"
#include "gpu/cuda/common.hpp"

namespace gpuvs::gpu::cuda {

const NcclLibrary& nccl() {
  static const NcclLibrary lib = [] {
    NcclLibrary n;
    n.handle = ::dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
    if (!n.handle) {
      const char* e = ::dlerror();
      n.why = std::string("NCCL cannot be loaded (") + (e ? e : "libnccl.so.2 not found") + ")";
      return n;
    }
    bool all = true;
    auto sym = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(::dlsym(n.handle, name));
      all = all && fn != nullptr;
    };
    sym(n.get_version, "ncclGetVersion");
    sym(n.get_unique_id, "ncclGetUniqueId");
    sym(n.init_all, "ncclCommInitAll");
    sym(n.init_rank, "ncclCommInitRank");
    sym(n.destroy, "ncclCommDestroy");
    sym(n.all_reduce, "ncclAllReduce");
    sym(n.all_gather, "ncclAllGather");
    sym(n.reduce_scatter, "ncclReduceScatter");
    sym(n.send, "ncclSend");
    sym(n.recv, "ncclRecv");
    sym(n.group_start, "ncclGroupStart");
    sym(n.group_end, "ncclGroupEnd");
    sym(n.error_string, "ncclGetErrorString");
    if (!all) n.why = "libnccl.so.2 lacks the entry points gpuvs needs (NCCL 2.7 or later has them)";
    return n;
  }();
  return lib;
}

void nccl_check(ncclResult_t r, const char* what) {
  if (r != ncclSuccess) throw CudaFailure(std::string(what) + ": " + nccl().error_string(r));
}

const NcclLibrary& nccl_for(const char* purpose) {
  const NcclLibrary& lib = nccl();
  if (!lib.why.empty()) throw RuntimeFailure(std::string(purpose) + " needs NCCL: " + lib.why);
  return lib;
}

ncclComm_t join_group(const std::string& unique_id, int rank, int size) {
  const NcclLibrary& lib = nccl_for("GPUs across MPI ranks");
  ncclUniqueId id;
  if (unique_id.size() != sizeof id.internal)
    throw RuntimeFailure("the NCCL group id is " + std::to_string(unique_id.size()) + " bytes, not " + std::to_string(sizeof id.internal) +
                         " (ranks built against different NCCL versions?)");
  std::memcpy(id.internal, unique_id.data(), sizeof id.internal);
  ncclComm_t comm = nullptr;
  const ncclResult_t r = lib.init_rank(&comm, size, id, rank);
  if (r != ncclSuccess)
    throw RuntimeFailure("ncclCommInitRank (rank " + std::to_string(rank) + " of " + std::to_string(size) + "): " + lib.error_string(r));
  return comm;
}

std::string nccl_version() {
  const NcclLibrary& n = nccl();
  if (!n.why.empty()) return n.why;
  int v = 0;
  n.get_version(&v);
  // NCCL 2.9 and later encode 2.x.y as 2*10000 + x*100 + y; earlier ones as 2*1000 + x*100 + y.
  if (v >= 10000) return "NCCL " + std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
  return "NCCL " + std::to_string(v / 1000) + "." + std::to_string(v / 100 % 10) + "." + std::to_string(v % 100);
}

}  // namespace gpuvs::gpu::cuda
