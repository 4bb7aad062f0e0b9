#include "runtime/sweep/backend.h"

#include <chrono>

#include "model/error.h"

namespace commsim {

double Backend::run_back_to_back(int n, bool /*blocking*/) {
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) run_once();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::string built_backends() {
  std::string out;
#ifdef COMMSIM_HAVE_MPI
  out += "host";
#endif
#ifdef COMMSIM_HAVE_CUDA
  out += out.empty() ? "cuda" : ", cuda";
#endif
  return out.empty() ? "none" : out;
}

std::unique_ptr<Backend> make_backend(std::string_view name, const BackendContext& ctx) {
#ifdef COMMSIM_HAVE_MPI
  if (name == "host") return make_host_backend(ctx);
#else
  (void)ctx;
#endif
#ifdef COMMSIM_HAVE_CUDA
  if (name == "cuda") return make_cuda_backend(ctx);
#endif
  if (name == "cuda")
    throw Error("backend 'cuda' is not in this build (built: " + built_backends() +
                "); rebuild on a machine with the CUDA toolkit");
  throw Error("unknown backend '" + std::string(name) + "' (built: " + built_backends() + ")");
}

}  // namespace commsim
