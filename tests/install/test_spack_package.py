"""The Spack package (cmake/spack/packages/commsim/package.py) read with a stand-in for Spack's
directives: every variant maps onto a CMake option that CMakeLists.txt declares, every dependency
CMake looks for is declared, and cmake_args() gives the options for a spec.

Usage: test_spack_package.py REPO_DIR"""

import re
import sys
import types

repo = sys.argv[1]
declared = {"variant": {}, "depends_on": [], "version": [], "conflicts": []}


class Spec:
    def __init__(self, on):
        self.on = set(on)
        self.variants = {"cuda_arch": types.SimpleNamespace(value=("90",))}

    def satisfies(self, what):
        return what[1:] in self.on if what.startswith("+") else what[1:] not in self.on


class CMakePackage:
    def define(self, name, value):
        value = {True: "ON", False: "OFF"}.get(value, value)
        return f"-D{name}={value}"

    def define_from_variant(self, name, variant):
        return self.define(name, variant in self.spec.on)


spack = types.ModuleType("spack")
pkg = types.ModuleType("spack.package")
pkg.CMakePackage = CMakePackage
pkg.CudaPackage = object
pkg.version = lambda *a, **k: declared["version"].append(a)
pkg.variant = lambda name, **k: declared["variant"].__setitem__(name, k)
pkg.depends_on = lambda spec, **k: declared["depends_on"].append(spec)
pkg.conflicts = lambda *a, **k: declared["conflicts"].append(a)
pkg.generator = lambda *a: None
pkg.__all__ = [n for n in dir(pkg) if not n.startswith("_")]
sys.modules["spack"] = spack
sys.modules["spack.package"] = pkg

namespace = {}
path = f"{repo}/cmake/spack/packages/commsim/package.py"
exec(compile(open(path).read(), path, "exec"), namespace)
Commsim = namespace["Commsim"]

failures = []
cmake_text = open(f"{repo}/CMakeLists.txt").read() + open(f"{repo}/cmake/CommsimDeps.cmake").read()
options = set(re.findall(r"\b(COMMSIM_[A-Z_]+)\b", cmake_text))

p = Commsim()
p.run_tests = False
p.spec = Spec({"mpi", "cuda", "nccl"})
args = p.cmake_args()
for a in args:
    name = a[2:].split("=")[0]
    if name.startswith("COMMSIM_") and name not in options:
        failures.append(f"cmake_args() sets {name}, which CMakeLists.txt does not declare")
expect = {"-DCOMMSIM_WITH_MPI=ON", "-DCOMMSIM_WITH_CUDA=ON", "-DCOMMSIM_WITH_NCCL=ON", "-DCOMMSIM_WITH_UCX=OFF",
          "-DCOMMSIM_MODEL_ONLY=OFF", "-DCOMMSIM_BUILD_TESTS=OFF", "-DCMAKE_CUDA_ARCHITECTURES=90"}
for e in expect - set(args):
    failures.append(f"cmake_args() for +mpi+cuda+nccl lacks {e} (gave {args})")
p.spec = Spec({"model_only"})
if "-DCOMMSIM_MODEL_ONLY=ON" not in p.cmake_args():
    failures.append("+model_only does not give -DCOMMSIM_MODEL_ONLY=ON")

# Every package CMake finds is a dependency of the Spack package.
spack_names = {"yaml-cpp": "yaml-cpp", "fmt": "fmt", "Eigen3": "eigen", "HDF5": "hdf5", "Boost": "boost",
               "nlohmann_json": "nlohmann-json", "MPI": "mpi", "ucx": "ucx", "GTest": "googletest"}
deps = " ".join(declared["depends_on"])
for cmake_name in re.findall(r"find_package\((\w[\w-]*)", cmake_text):
    if cmake_name in ("Threads", "PkgConfig", "CUDAToolkit"):
        continue
    want = spack_names.get(cmake_name)
    if want is None:
        failures.append(f"CMake finds {cmake_name}; the test does not know its Spack name")
    elif not re.search(rf"(^|\s){re.escape(want)}(\W|$)", deps):
        failures.append(f"CMake finds {cmake_name} but package.py does not depend on {want}")
for variant in ("mpi", "nccl", "ucx", "model_only"):
    if variant not in declared["variant"]:
        failures.append(f"no variant {variant}")

for f in failures:
    print("FAIL:", f)
print(f"test_spack_package: {len(declared['variant'])} variants, {len(declared['depends_on'])} dependencies, "
      f"{len(failures)} problems")
sys.exit(1 if failures else 0)
