#include "workloads/gpu/cublas_api.hpp"

#include <dlfcn.h>

#include <string>

#include "core/error.hpp"

namespace dtbench::gpu {

namespace {

// DTBENCH_CUBLAS_SONAME and DTBENCH_CUBLAS_PATH come from workloads/gpu/CMakeLists.txt.
void* open_cublas() {
  std::string why;
  for (const char* name : {DTBENCH_CUBLAS_SONAME, DTBENCH_CUBLAS_PATH}) {
    if (void* h = ::dlopen(name, RTLD_NOW | RTLD_LOCAL)) return h;
    const char* e = ::dlerror();
    why += std::string(why.empty() ? "" : "; ") + (e != nullptr ? e : name);
  }
  throw RunFailed("cuBLAS: cannot load " DTBENCH_CUBLAS_SONAME " (" + why + ")");
}

template <typename F>
void resolve(void* lib, const char* symbol, F& out) {
  out = reinterpret_cast<F>(::dlsym(lib, symbol));
  if (out == nullptr) throw RunFailed(std::string("cuBLAS: ") + DTBENCH_CUBLAS_SONAME + " has no " + symbol);
}

CublasApi load() {
  void* lib = open_cublas();  // never closed: the handles made from it live until the process ends
  CublasApi api{};
  resolve(lib, "cublasCreate_v2", api.create);
  resolve(lib, "cublasDestroy_v2", api.destroy);
  resolve(lib, "cublasSetStream_v2", api.set_stream);
  resolve(lib, "cublasSetMathMode", api.set_math_mode);
  resolve(lib, "cublasGemmEx", api.gemm_ex);
  resolve(lib, "cublasGetStatusName", api.status_name);
  resolve(lib, "cublasGetStatusString", api.status_string);
  return api;
}

}  // namespace

const char* cublas_soname() { return DTBENCH_CUBLAS_SONAME; }

const CublasApi& cublas_api() {
  // A static whose initialiser throws is not initialised: the next call tries again (std::call_once is not
  // used: with libstdc++ a call after a throwing one can block for ever, GCC bug 66146).
  static const CublasApi api = load();
  return api;
}

}  // namespace dtbench::gpu
