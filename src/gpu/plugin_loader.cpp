// SPDX-License-Identifier: Apache-2.0
#include "gpu/plugin_loader.hpp"

#include <dlfcn.h>
#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <vector>

namespace gpuvs::gpu {

namespace {

namespace fs = std::filesystem;

struct Loaded {
  Api* api = nullptr;
  std::string why;
};

std::vector<fs::path> candidates() {
  std::vector<fs::path> out;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    out.push_back(exe.parent_path() / "libgpuvs_cuda.so");
    out.push_back(exe.parent_path() / ".." / "lib" / "gpuvs" / "libgpuvs_cuda.so");
  }
#ifdef GPUVS_PLUGIN_BUILD_PATH
  out.emplace_back(GPUVS_PLUGIN_BUILD_PATH);
#endif
  return out;
}

Loaded load() {
  Loaded r;
  std::vector<fs::path> paths;
  if (const char* env = std::getenv("GPUVS_CUDA_PLUGIN"); env && *env) {
    if (std::string(env) == "none") {
      r.why = "the CUDA plugin is disabled (GPUVS_CUDA_PLUGIN=none)";
      return r;
    }
    paths.emplace_back(env);
    std::error_code ec;
    if (!fs::exists(paths.back(), ec)) {
      r.why = fmt::format("GPUVS_CUDA_PLUGIN={}: no such file", env);
      return r;
    }
  } else {
#ifndef GPUVS_PLUGIN_BUILD_PATH
    r.why = "this gpuvs was built without CUDA (no nvcc at configure time, or GPUVS_CUDA=OFF)";
    return r;
#endif
    paths = candidates();
  }
  std::string errors;
  for (const auto& p : paths) {
    std::error_code ec;
    if (!fs::exists(p, ec)) continue;
    // RTLD_LOCAL: the plugin's static CUDA runtime and cuBLASLt stay private to it.
    void* h = ::dlopen(p.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      const char* e = ::dlerror();
      errors = fmt::format("{} cannot be loaded ({})", p.string(), e ? e : "unknown error");
      continue;
    }
    auto entry = reinterpret_cast<Api* (*)()>(::dlsym(h, "gpuvs_gpu_plugin"));
    Api* api = entry ? entry() : nullptr;
    if (!api) {
      errors = fmt::format("{} is not a gpuvs CUDA plugin", p.string());
      continue;
    }
    if (api->abi_version() != kAbiVersion) {
      errors = fmt::format("{} is from another gpuvs build (ABI {}, expected {})", p.string(), api->abi_version(),
                           kAbiVersion);
      continue;
    }
    r.api = api;  // never dlclosed: the CUDA runtime must outlive static destructors
    return r;
  }
  r.why = errors.empty() ? "the CUDA plugin libgpuvs_cuda.so was not found next to gpuvs" : errors;
  return r;
}

}  // namespace

Api* plugin(std::string& why) {
  static const Loaded loaded = load();
  why = loaded.why;
  return loaded.api;
}

}  // namespace gpuvs::gpu
