#include "runtime/sweep/backend.h"

#include "model/error.h"

namespace commsim {

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
