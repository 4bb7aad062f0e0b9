#!/usr/bin/env bash
# `pip install ./analysis` on a fresh copy of the repository (its tracked files) into a fresh
# virtual environment, then what a notebook does: read a results file, predict, and the package's
# pytest tests (analysis/tests/test_package.py) against the installed package.
#   test_python_package.sh SOURCE_DIR BUILD_DIR
# Needs python3 with venv, the model's C++ dependencies, and PyPI (or a pip mirror) for
# scikit-build-core, pybind11, numpy, pandas, h5py and pytest.
set -euo pipefail
src=$1
build=$2
work=$build/python-package
rm -rf "$work"
mkdir -p "$work/clone"
# A fresh clone: the files git knows (committed or not), nothing built or ignored.
git -C "$src" ls-files -z --cached --others --exclude-standard |
  (cd "$src" && xargs -0 tar -cf - --no-recursion) | tar -xf - -C "$work/clone"
python3 -m venv "$work/venv"
py=$work/venv/bin/python
launcher=""
if command -v ccache >/dev/null; then
  launcher="-DCMAKE_CXX_COMPILER_LAUNCHER=ccache"
  export CCACHE_BASEDIR=$work/clone  # the same relative paths hit the cache from run to run
fi
CMAKE_ARGS="$launcher" CMAKE_BUILD_PARALLEL_LEVEL=2 \
  "$py" -m pip install --quiet --disable-pip-version-check "$work/clone/analysis[test]"

cd "$work"
"$build/src/runtime/commsim" predict --topology dgx-a100 --nodes 1,2 --sizes 1KiB,1MiB --out run.h5 --format csv \
  >/dev/null
unset COMMSIM_CONFIG_DIR  # the package finds its own copy of the presets
"$py" -c "
import commsim
df = commsim.read('run.h5')
assert len(df) > 0 and df['collective'].iloc[0] == 'allreduce', df
p = commsim.predict(topology='dgx-h100', collective='allreduce', sizes=['1MiB', '1GiB'], nodes=2,
                    algorithms=['ring', 'tree'])
assert len(p) == 4 and (p['predicted_us'] > 0).all(), p
print(p[['algorithm', 'nodes', 'bytes', 'predicted_us', 'predicted_busbw_gbps']].to_string(index=False))
"
COMMSIM_BIN=$build/src/runtime/commsim "$py" -m pytest -q -p no:cacheprovider "$work/clone/analysis/tests/test_package.py"
