"""commsim from Python: its files as pandas DataFrames, and its cost model.

    import commsim
    df = commsim.read("run.h5")        # results (run, predict, import), probe or plan files
    pred = commsim.predict(topology="dgx-h100", collective="allreduce",
                           sizes=["1MiB", "1GiB"], nodes=[1, 2], algorithms=["ring", "tree"])
    layouts = commsim.plan(topology="dgx-h100", model="llama3-70b", nodes=16,
                           global_batch=1024, seq=8192)

Conventions, the same in every DataFrame: times in microseconds (`*_us`) or seconds (`*_s`),
bandwidths in GB/s = 1e9 B/s (`*_gbps`, nccl-tests' definitions), sizes in bytes (`bytes`,
`*_bytes`), strings decoded. The model's error is `rel_error`, a signed fraction
(predicted - measured median) / measured median, as in the files; `rel_error_pct` is the same in
percent, as the command's tables print it.

`read` needs only h5py, numpy and pandas. `predict` and `plan` call the C++ model
(commsim._core, built by `pip install ./analysis`); no MPI or GPU is needed.
"""

from __future__ import annotations

import os
from typing import Iterable, Sequence

import numpy as np
import pandas as pd

from . import h5

__all__ = ["read", "predict", "plan", "h5"]

_HERE = os.path.dirname(os.path.abspath(__file__))


def _model():
    """The compiled model, with the presets and model files the package carries (unless
    $COMMSIM_CONFIG_DIR names others)."""
    try:
        from . import _core as core
    except ImportError as e:
        raise ImportError("commsim.predict and commsim.plan need the compiled model: install the package with "
                          "`pip install ./analysis` from the commsim repository") from e
    packaged = os.path.join(_HERE, "configs")
    if "COMMSIM_CONFIG_DIR" not in os.environ and os.path.isdir(packaged):
        os.environ["COMMSIM_CONFIG_DIR"] = packaged
    return core


def _file_kind(path: str) -> str:
    import h5py
    with h5py.File(path, "r") as f:
        if "plan" in f:
            return "plan"
        if "probe" in f:
            return "probe"
        if "points" in f:
            return "results"
    raise ValueError(f"{path}: not a commsim file (no /points table, /probe or /plan group)")


def _with_error_pct(df: pd.DataFrame) -> pd.DataFrame:
    if "rel_error" in df.columns:
        df["rel_error_pct"] = df["rel_error"] * 100.0
    return df


def read(path: str | os.PathLike | Iterable[str | os.PathLike]) -> pd.DataFrame:
    """A commsim HDF5 file (or several results files) as one DataFrame.

    - results files (`commsim run/predict/import --out`): one row per point, with `file`,
      `run_status`, `samples` (per-iteration times, us) and `rel_error_pct`;
    - probe files (`commsim probe --out`): the measurements; the /probe attributes in `df.attrs`;
    - plan files (`commsim plan --out`): the layouts in rank order; the attributes, `collectives`,
      `excluded`, `assumptions` and `warnings` in `df.attrs`.
    """
    paths = [os.fspath(path)] if isinstance(path, (str, os.PathLike)) else [os.fspath(p) for p in path]
    if not paths:
        raise ValueError("commsim.read: no file given")
    kinds = {p: _file_kind(p) for p in paths}
    if len(paths) > 1 and set(kinds.values()) != {"results"}:
        raise ValueError("commsim.read: several files are read together only when all are results files; got " +
                         ", ".join(f"{p} ({k})" for p, k in kinds.items()))
    kind = kinds[paths[0]]
    if kind == "results":
        return _with_error_pct(h5.read_points(paths))
    if kind == "probe":
        df, attrs = h5.read_probe(paths[0])
    else:
        df, attrs = h5.read_plan(paths[0])
    df.attrs.update(attrs)
    return df


def _names(value: str | Sequence[str] | None) -> list[str] | None:
    if value is None:
        return None
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    return [str(v) for v in value]


def predict(topology: str = "dgx-h100", collective: str | Sequence[str] = "allreduce",
            sizes: Sequence[int | str] = ("1KiB", "1MiB", "1GiB"), nodes: int | Sequence[int] = 1,
            algorithms: str | Sequence[str] | None = None, protocols: str | Sequence[str] = "none",
            gpus_per_node: int = 0, channels: int = 0, dtype: str = "float32",
            nccl_version: str = "") -> pd.DataFrame:
    """`commsim predict` as a DataFrame: one row per (collective, algorithm, protocol, nodes, bytes).

    topology: a preset name (dgx-h100, dgx-a100, ...) or a topology YAML path.
    collective: one name or a list (allreduce, allgather, reducescatter, broadcast, reduce,
        sendrecv, alltoall). sizes: bytes as ints or with units ("1MiB", "4GB").
    nodes: a node count or a list. algorithms: names (ring, tree, nccl, nccl-ring, ...); None for
        every hand-written one that applies plus NCCL's own choice on a GPU topology.
    protocols: "none" or NCCL protocols (LL, LL128, Simple). gpus_per_node: 0 for the topology's.
    channels: 0 for the topology's default. nccl_version: NCCL release of NCCL's model ("" = the
        topology's).

    Columns: collective, algorithm, protocol, nccl_pick (NCCL's choice, for algorithm nccl), dtype,
    nodes, ranks, bytes, count, predicted_us with its latency_us, bandwidth_us, reduction_us and
    copy_us terms, predicted_algbw_gbps, predicted_busbw_gbps, predicted_winner. `df.attrs`:
    `crossovers` and `skipped` (lines, as the command prints them).
    """
    node_list = [int(nodes)] if isinstance(nodes, (int, np.integer)) else [int(n) for n in nodes]
    cols, crossovers, skipped = _model().predict(
        topology=str(topology), collectives=_names(collective), sizes=[str(s) for s in sizes], nodes=node_list,
        algorithms=_names(algorithms), protocols=_names(protocols), gpus_per_node=int(gpus_per_node),
        channels=int(channels), dtype=dtype, nccl_version=nccl_version)
    df = pd.DataFrame(cols)
    df.attrs["crossovers"] = list(crossovers)
    df.attrs["skipped"] = list(skipped)
    return df


def plan(topology: str, model: str, nodes: int, global_batch: int, seq: int, micro_batch: int = 1,
         zero: int = 0, sequence_parallel: bool = False, recompute: str = "none", overlap: str = "none",
         gpu_tflops: float = 0.0, memory_limit: str = "", memory_reserve: str = "default",
         grad_dtype: str = "auto") -> pd.DataFrame:
    """The planner's ranked (DP, TP, PP, EP) layouts of a training job, best first, as a DataFrame.

    The plain model (`commsim plan` adds its defaults for fused attention, ZeRO-1 and the compute
    rate on top): model is a name from configs/models (llama3-70b, gpt3-175b, ...) or a model
    file; global_batch sequences per iteration, seq tokens per sequence; gpu_tflops > 0 adds the
    compute estimate (step_s, comm_share) and ranks by step time, else by communication;
    memory_limit bytes per GPU with units ("80GB"; "" = the device's); memory_reserve and
    grad_dtype as `commsim plan --memory-reserve/--grad-dtype` ("default": a GPU keeps 0.5 GiB for
    the CUDA context, 1 GiB for NCCL and 2% for fragmentation; "auto": fp32 gradients for bf16
    parameters, as Megatron-LM).

    Columns: dp, tp, pp, ep, vp, micro_batches, comm_s (exposed communication per iteration),
    comm_total_s, tp_comm_s, pp_comm_s, dp_comm_s, ep_comm_s, bubble_fraction, memory_bytes (per
    GPU), compute_s, step_s, comm_share (NaN without gpu_tflops), outside_calibration.
    `df.attrs`: `excluded` (layout, reason) pairs, `assumptions`, `warnings`.
    """
    cols, excluded, assumptions, warnings = _model().plan(
        topology=str(topology), model=str(model), nodes=int(nodes), global_batch=int(global_batch), seq=int(seq),
        micro_batch=int(micro_batch), zero=int(zero), sequence_parallel=bool(sequence_parallel),
        recompute=recompute, overlap=overlap, gpu_tflops=float(gpu_tflops), memory_limit=str(memory_limit),
        memory_reserve=str(memory_reserve), grad_dtype=str(grad_dtype))
    df = pd.DataFrame(cols)
    df.attrs["excluded"] = list(excluded)
    df.attrs["assumptions"] = list(assumptions)
    df.attrs["warnings"] = list(warnings)
    return df
