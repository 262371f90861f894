// SPDX-License-Identifier: Apache-2.0
// A shared library opened with dlopen and closed when it goes out of scope; symbols looked up by name.
// Used for the NVIDIA driver and NVML, which gpuvs must not link against (one binary runs everywhere).
#pragma once
#include <dlfcn.h>

#include <string>

namespace gpuvs::hw {

class Library {
 public:
  explicit Library(const std::string& name) : h_(::dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL)) {}
  ~Library() {
    if (h_) ::dlclose(h_);
  }
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;
  explicit operator bool() const { return h_ != nullptr; }
  template <class F>
  F get(const char* symbol) const {
    return h_ ? reinterpret_cast<F>(::dlsym(h_, symbol)) : nullptr;
  }

 private:
  void* h_;
};

}  // namespace gpuvs::hw
