# Spack package for commsim, built from a clone of its repository:
#   spack repo add cmake/spack
#   spack dev-build commsim@develop +cuda +nccl ^openmpi fabrics=ucx     (run in the clone)
# The installed `commsim` finds its presets under <prefix>/share/commsim/configs, and
# find_package(commsim) gives commsim::model to other CMake projects.

from spack.package import *


class Commsim(CMakePackage, CudaPackage):
    """Predicts and measures collective communication (allreduce, allgather, ...) on GPU
    clusters: an alpha-beta-gamma model of NVLink/PCIe/InfiniBand topologies, an mpirun-launched
    runtime that times hand-written schedules beside NCCL and MPI, and calibration of the model
    to the measurements."""

    # Built from the clone it sits in (`spack dev-build`): no download location.
    version("develop")

    variant("mpi", default=True, description="Build the MPI runtime (commsim run, probe)")
    variant("nccl", default=True, when="+cuda", description="Build the NCCL baselines (needs CUDA)")
    variant("ucx", default=False, when="+mpi", description="Build the UCX transport")
    variant("model_only", default=False, description="Only the model and schedule libraries (no runtime)")

    depends_on("cmake@3.24:", type="build")
    depends_on("ninja", type="build")
    generator("ninja")

    depends_on("yaml-cpp")
    depends_on("fmt")
    depends_on("eigen@3.3:")
    depends_on("nlohmann-json")
    depends_on("boost+program_options", when="~model_only")
    depends_on("hdf5~mpi", when="~model_only")
    depends_on("mpi", when="+mpi")
    depends_on("nccl", when="+nccl")
    depends_on("ucx", when="+ucx")
    depends_on("googletest", type="test")

    conflicts("+mpi", when="+model_only")
    conflicts("+cuda", when="+model_only")

    def cmake_args(self):
        def on_off(name):
            return "ON" if self.spec.satisfies("+" + name) else "OFF"

        args = [
            self.define_from_variant("COMMSIM_MODEL_ONLY", "model_only"),
            self.define("COMMSIM_WITH_MPI", on_off("mpi")),
            self.define("COMMSIM_WITH_CUDA", on_off("cuda")),
            self.define("COMMSIM_WITH_NCCL", on_off("nccl")),
            self.define("COMMSIM_WITH_UCX", on_off("ucx")),
            self.define("COMMSIM_BUILD_TESTS", self.run_tests),
        ]
        if self.spec.satisfies("+cuda"):
            archs = self.spec.variants["cuda_arch"].value
            if archs and archs[0] != "none":
                args.append(self.define("CMAKE_CUDA_ARCHITECTURES", ";".join(archs)))
        return args
