"""Read commsim HDF5 results files (schema version 1, src/runtime/h5/HDF5_SCHEMA.md) into pandas.

Plain h5py, numpy and pandas: no commsim code is needed to read the files. `commsim.read` (the
package's front door) builds on these; they stay for scripts that want the raw columns.

    from commsim import h5
    points = h5.read_points(["run.h5"])           # one row per point, all files
    runs = h5.read_runs("run.h5")                 # one row per run (context)
    probe, attrs = h5.read_probe("portrait.h5")   # /probe measurements of `commsim probe`
    layouts, attrs = h5.read_plan("plan.h5")      # /plan layouts of `commsim plan --out`
    binary = h5.find_commsim("my_script.py")      # for what the files do not hold (verdicts)
"""

from __future__ import annotations

import glob
import os
import shutil
import sys
from typing import Iterable

import h5py
import numpy as np
import pandas as pd

SCHEMA_VERSION = 1

# The repository, when the package is used from its source folder (analysis/commsim/).
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def find_commsim(program: str) -> str:
    """The commsim binary: $COMMSIM_BIN, else build/src/runtime/commsim, else the first
    build-*/src/runtime/commsim of the repository, else `commsim` on PATH. Exits naming `program`
    when there is none."""
    env = os.environ.get("COMMSIM_BIN")
    if env:
        if not (os.path.isfile(env) and os.access(env, os.X_OK)):
            sys.exit(f"{program}: COMMSIM_BIN={env} is not an executable file")
        return env
    for path in [os.path.join(REPO, "build", "src", "runtime", "commsim")] + sorted(
            glob.glob(os.path.join(REPO, "build-*", "src", "runtime", "commsim"))):
        if os.access(path, os.X_OK):
            return path
    on_path = shutil.which("commsim")
    if on_path:
        return on_path
    sys.exit(f"{program}: no commsim binary; build it or set COMMSIM_BIN")


def _text(value) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace").rstrip("\x00")
    if isinstance(value, np.ndarray) and value.shape == ():
        return _text(value[()])
    return "" if value is None else str(value)


def _check_schema(f: h5py.File, path: str) -> None:
    version = f.attrs.get("schema_version")
    if version is None or "points" not in f:
        raise ValueError(f"{path}: not a commsim results file (no schema_version attribute or /points table)")
    if int(version) != SCHEMA_VERSION:
        raise ValueError(f"{path}: schema version {int(version)}, this reader knows version {SCHEMA_VERSION}")


def read_runs(path: str) -> pd.DataFrame:
    """One row per /runs/<NNNN> group: its attributes; hostnames, cpus, gpu_names and environment as lists."""
    rows = []
    with h5py.File(path, "r") as f:
        _check_schema(f, path)
        for name in sorted(f["runs"].keys()):
            g = f["runs"][name]
            row = {k: (_text(v) if isinstance(v, (bytes, str, np.bytes_)) else v) for k, v in g.attrs.items()}
            for lst in ("hostnames", "cpus", "gpu_names", "environment"):
                if lst in g:
                    row[lst] = [_text(x) for x in g[lst][:]]
            row["file"] = path
            rows.append(row)
    return pd.DataFrame(rows)


def read_points_file(path: str) -> pd.DataFrame:
    """The /points table of one file, strings decoded, with `file`, `run_status` and `samples` (each
    point's per-iteration times, us, as an array) columns."""
    with h5py.File(path, "r") as f:
        _check_schema(f, path)
        table = f["points"][:]
        all_samples = f["samples"][:] if "samples" in f else np.empty(0)
        status_of_run = {}
        for name in f["runs"].keys():
            g = f["runs"][name]
            status_of_run[int(g.attrs["index"])] = _text(g.attrs.get("status", ""))
    df = pd.DataFrame({name: table[name] for name in table.dtype.names})
    for col in df.columns:
        if df[col].dtype == object or df[col].dtype.kind == "S":
            df[col] = [_text(v) for v in df[col]]
    df["file"] = path
    df["run_status"] = [status_of_run.get(int(r), "") for r in df["run"]] if len(df) else []
    df["samples"] = [all_samples[int(o): int(o) + int(n)] for o, n in zip(df["samples_offset"], df["samples_count"])] \
        if len(df) else []
    return df


def read_points(paths: Iterable[str] | str) -> pd.DataFrame:
    """The points of every file, in file order then row order (the order `commsim report` uses)."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    frames = [read_points_file(str(p)) for p in paths]
    if not frames:
        return pd.DataFrame()
    df = pd.concat(frames, ignore_index=True)
    df["order"] = np.arange(len(df))
    return df


def read_samples(path: str, offset: int, count: int) -> np.ndarray:
    """Per-iteration times (us) of one point: its samples_offset and samples_count."""
    with h5py.File(path, "r") as f:
        return f["samples"][offset : offset + count]


def read_probe(path: str) -> tuple[pd.DataFrame, dict]:
    """The /probe group of a `commsim probe` file: measurements as a DataFrame, attributes as a dict."""
    with h5py.File(path, "r") as f:
        if "probe" not in f:
            raise ValueError(f"{path}: no /probe group (not written by `commsim probe`)")
        g = f["probe"]
        attrs = {k: (_text(v) if isinstance(v, (bytes, str, np.bytes_)) else int(v)) for k, v in g.attrs.items()}
        m = g["measurements"]
        cols = {}
        for name in m.keys():
            data = m[name][:]
            cols[name] = [_text(v) for v in data] if data.dtype.kind in ("O", "S") else data
    return pd.DataFrame(cols), attrs


def read_plan(path: str) -> tuple[pd.DataFrame, dict]:
    """The /plan group of a `commsim plan --out` file: the layouts (rank order) as a DataFrame and
    the attributes plus `collectives`, `excluded` (DataFrames), `assumptions` and `warnings`
    (lists of lines) as a dict."""
    with h5py.File(path, "r") as f:
        if "plan" not in f:
            raise ValueError(f"{path}: no /plan group (not written by `commsim plan --out`)")
        g = f["plan"]
        attrs = {k: (_text(v) if isinstance(v, (bytes, str, np.bytes_)) else v.item() if hasattr(v, "item") else v)
                 for k, v in g.attrs.items()}
        tables = {}
        for name in ("layouts", "collectives", "excluded"):
            data = g[name][:] if name in g else np.empty(0)
            df = pd.DataFrame({n: data[n] for n in data.dtype.names}) if data.dtype.names else pd.DataFrame()
            for col in df.columns:
                if df[col].dtype == object or df[col].dtype.kind == "S":
                    df[col] = [_text(v) for v in df[col]]
            tables[name] = df
        for name in ("assumptions", "warnings"):
            attrs[name] = [_text(v) for v in g[name][:]] if name in g else []
    attrs["collectives"] = tables["collectives"]
    attrs["excluded"] = tables["excluded"]
    return tables["layouts"], attrs
