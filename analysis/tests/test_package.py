"""The installed package `commsim` (pip install ./analysis): read() on real files, predict() and
plan() over the C++ model, checked against the command's own output."""

import io
import os
import subprocess

import h5py
import numpy as np
import pandas as pd
import pytest

import commsim
from test_report import find_binary

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
RUN = os.path.join(REPO, "results", "host-cpu-8ranks", "run1.h5")  # measured on 8 ranks, committed
PORTRAIT = os.path.join(REPO, "results", "host-cpu-8ranks", "portrait.h5")


def commsim_cli(*args):
    env = dict(os.environ, COMMSIM_CONFIG_DIR=os.path.join(REPO, "configs"))
    proc = subprocess.run([find_binary(), *args], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_read_results_decodes_strings_and_states_error_in_both_units():
    df = commsim.read(RUN)
    with h5py.File(RUN, "r") as f:
        raw = f["points"][:]
    assert len(df) == len(raw) > 0
    assert all(isinstance(v, str) for v in df["collective"]) and set(df["collective"]) >= {"allreduce"}
    measured = df[df["measured_median_us"].notna() & df["predicted_us"].notna()]
    assert len(measured) > 0
    np.testing.assert_allclose(measured["rel_error"],
                               (measured["predicted_us"] - measured["measured_median_us"]) /
                               measured["measured_median_us"], rtol=1e-9)
    np.testing.assert_allclose(df["rel_error_pct"], df["rel_error"] * 100.0)
    assert len(df["samples"].iloc[0]) == df["samples_count"].iloc[0]


def test_read_probe_and_plan_files(tmp_path):
    probe = commsim.read(PORTRAIT)
    assert len(probe) > 0 and probe.attrs, "probe measurements with the /probe attributes"
    plan_file = tmp_path / "plan.h5"
    commsim_cli("plan", "--topology", "dgx-h100", "--nodes", "4", "--model", "llama3-8b", "--global-batch", "64",
                "--seq", "4096", "--format", "csv", "--out", str(plan_file))
    layouts = commsim.read(plan_file)
    assert len(layouts) > 0 and {"dp", "tp", "pp", "comm_s"} <= set(layouts.columns)
    assert (layouts["dp"] * layouts["tp"] * layouts["pp"] == 32).all()
    assert isinstance(layouts.attrs["assumptions"], list) and len(layouts.attrs["collectives"]) > 0
    with pytest.raises(ValueError, match="only when all are results files"):
        commsim.read([RUN, plan_file])


def test_predict_is_the_commands_model():
    df = commsim.predict(topology="dgx-h100", collective="allreduce", sizes=["8B", "1MiB", "1GiB"], nodes=[1, 4],
                         algorithms=["ring", "tree", "nccl"])
    cli = pd.read_csv(io.StringIO(commsim_cli("predict", "--topology", "dgx-h100", "--sizes", "8B,1MiB,1GiB",
                                              "--nodes", "1,4", "--algorithms", "ring,tree,nccl",
                                              "--format", "csv")))
    assert len(df) == len(cli) == 3 * 2 * 3
    np.testing.assert_allclose(df["predicted_us"], cli["predicted_us"], rtol=1e-12)
    np.testing.assert_allclose(df["predicted_busbw_gbps"], cli["predicted_busbw_gbps"], rtol=1e-12)
    assert list(df["predicted_winner"]) == list(cli["predicted_winner"])
    terms = df["latency_us"] + df["bandwidth_us"] + df["reduction_us"] + df["copy_us"]
    ours = df["algorithm"] != "nccl"
    assert (terms[ours] <= df["predicted_us"][ours] * (1 + 1e-9)).all()
    assert any("beats" in line or "wins" in line for line in df.attrs["crossovers"])
    assert df.loc[~ours, "nccl_pick"].str.startswith("nccl-").all()


def test_predict_errors_name_what_to_fix():
    with pytest.raises(ValueError, match="unknown name 'ringg'; valid: .*ring"):
        commsim.predict(algorithms=["ringg"])
    with pytest.raises(ValueError, match="gpus-per-node"):
        commsim.predict(gpus_per_node=99)
    with pytest.raises(ValueError):
        commsim.predict(topology="no-such-topology")


def test_plan_ranks_layouts_by_communication():
    df = commsim.plan(topology="dgx-h100", model="llama3-70b", nodes=16, global_batch=1024, seq=8192, zero=1,
                      sequence_parallel=True, recompute="selective")
    assert len(df) > 0
    assert (df["dp"] * df["tp"] * df["pp"] == 128).all()
    assert df["comm_s"].iloc[0] == df["comm_s"].min()
    assert df["step_s"].isna().all(), "no compute estimate without gpu_tflops"
    with_compute = commsim.plan(topology="dgx-h100", model="llama3-70b", nodes=16, global_batch=1024, seq=8192,
                                zero=1, sequence_parallel=True, recompute="selective", gpu_tflops=400)
    assert with_compute["step_s"].notna().all() and with_compute["step_s"].iloc[0] == with_compute["step_s"].min()


def test_plan_keeps_the_memory_reserve_of_commsim_plan():
    # As `commsim plan` (apply_training_defaults): a GPU keeps 0.5 GiB + 1 GiB + 2% free by default.
    kw = dict(topology="dgx-h100", model="llama3-70b", nodes=16, global_batch=1024, seq=8192, zero=1,
              sequence_parallel=True, recompute="selective")
    gib = 2.0**30
    assert commsim.plan(**kw)["memory_bytes"].max() <= 80 * gib * 0.98 - 1.5 * gib
    none, big = commsim.plan(memory_reserve="0", **kw), commsim.plan(memory_reserve="20GiB", **kw)
    assert big["memory_bytes"].max() <= 60 * gib < none["memory_bytes"].max(), "a reserve leaves layouts out"
