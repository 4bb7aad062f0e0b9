"""analysis/report.py on HDF5 files written by the real commsim binary: the figures exist and the
numbers are those of `commsim report --format json`.

The binary is $COMMSIM_BIN, else the first of build-ci/, build*/ under the repository that has
src/runtime/commsim. MPI runs use mpiexec with 2 ranks (--oversubscribe).
"""

import glob
import json
import math
import os
import shutil
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ANALYSIS = os.path.dirname(HERE)
REPO = os.path.dirname(ANALYSIS)
sys.path.insert(0, ANALYSIS)

from commsim import h5 as commsim_h5  # noqa: E402
import report  # noqa: E402


def find_binary():
    env = os.environ.get("COMMSIM_BIN")
    if env:
        return env
    dirs = [os.path.join(REPO, os.environ.get("COMMSIM_BUILD_DIR", "build-ci"))] + sorted(glob.glob(os.path.join(REPO, "build*")))
    for d in dirs:
        path = os.path.join(d, "src", "runtime", "commsim")
        if os.access(path, os.X_OK):
            return path
    pytest.skip("commsim binary not found: build it or set COMMSIM_BIN")


def mpi_env():
    env = dict(os.environ)
    env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               COMMSIM_CONFIG_DIR=os.path.join(REPO, "configs"))
    return env


def run(cmd, **kw):
    proc = subprocess.run(cmd, capture_output=True, text=True, env=mpi_env(), timeout=600, **kw)
    assert proc.returncode == 0, f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    binary = find_binary()
    mpiexec = shutil.which("mpiexec")
    if not mpiexec:
        pytest.skip("mpiexec not found")
    probe = subprocess.run([binary, "run", "--help"], capture_output=True, text=True, env=mpi_env())
    if "not available in this build" in probe.stderr:
        pytest.skip("this commsim build has no `run` command")
    d = tmp_path_factory.mktemp("commsim")
    run_h5 = str(d / "run.h5")
    pred_h5 = str(d / "pred.h5")
    run([mpiexec, "--oversubscribe", "-np", "2", binary, "run", "--topology", "local-cpu", "--backend", "host",
         "--collectives", "allreduce,allgather", "--algorithms", "ring,recursive-doubling,mpi",
         "--sizes", "1KiB:4MiB:x4", "--iters", "3", "--warmup", "1", "--out", run_h5])
    # A second file, 3 ranks, ring and tree: several files, two rank counts, a ring/tree crossover plot,
    # and enough samples (6, where the 2-rank file has 3) for the winners' significance tests.
    run3_h5 = str(d / "run3.h5")
    run([mpiexec, "--oversubscribe", "-np", "3", binary, "run", "--topology", "local-cpu", "--backend", "host",
         "--collectives", "allreduce", "--algorithms", "ring,tree", "--sizes", "1KiB:4MiB:x4", "--iters", "6",
         "--warmup", "1", "--out", run3_h5])
    run([binary, "predict", "--topology", "local-cpu", "--collectives", "allreduce", "--algorithms", "ring,tree",
         "--sizes", "1KiB:4MiB:x4", "--out", pred_h5])
    return {"bin": binary, "dir": d, "run": run_h5, "run3": run3_h5, "pred": pred_h5}


def commsim_report(binary, paths):
    return json.loads(run([binary, "report", *paths, "--format", "json"]))


def close(a, b, rel=1e-9):
    return math.isclose(a, b, rel_tol=rel, abs_tol=1e-12)


def test_reader_reads_every_point(files):
    paths = [files["run"], files["run3"], files["pred"]]
    ours = commsim_report(files["bin"], paths)
    df = commsim_h5.read_points(paths)
    assert len(df) == ours["points"]
    assert set(df["status"]) <= {"ok", "predicted", "wrong", "timeout", "error", "skipped"}
    runs = commsim_h5.read_runs(files["run"])
    assert runs.loc[0, "ranks"] == 2 and len(runs.loc[0, "hostnames"]) == 2
    assert len(runs.loc[0, "cpus"]) == 2 and all(runs.loc[0, "cpus"])
    assert runs.loc[0, "cpu_binding"]


def test_figures_and_markdown_exist(files):
    out = str(files["dir"] / "report")
    assert report.main([files["run"], files["run3"], files["pred"], "--out", out]) == 0
    md = open(os.path.join(out, "report.md")).read()
    expected = ["parity.png", "time_vs_size_allreduce.png", "time_vs_size_allgather.png", "busbw_vs_size_allreduce.png",
                "error_heatmap.png", "crossover_ring_tree.png", "node_scaling.png"]
    for name in expected:
        path = os.path.join(out, name)
        assert os.path.getsize(path) > 1000, name
        with open(path, "rb") as f:
            assert f.read(8) == b"\x89PNG\r\n\x1a\n", name
        assert f"({name})" in md, f"report.md does not embed {name}"
    assert "2 host ranks; CPUs: " in md, "report.md does not say how the ranks were bound"


def test_numbers_are_commsim_reports(files):
    out = str(files["dir"] / "report_numbers")
    paths = [files["run"], files["run3"], files["pred"]]
    assert report.main([*paths, "--out", out]) == 0
    py = json.load(open(os.path.join(out, "report.json")))
    cc = commsim_report(files["bin"], paths)
    assert py["points"] == cc["points"] and py["compared"] == cc["compared"] and py["compared"] > 0
    assert py["summary"] == cc["summary"] and py["groups"] == cc["groups"]
    assert py["winners"]["rows"] == cc["winners"]["rows"]
    md = open(os.path.join(out, "report.md")).read()
    median_small = cc["summary"]["below_64KiB"]["median_abs_rel_error"]
    assert f"{100 * median_small:.1f}%" in md


def test_winners_verdict_agrees_with_scipy(files):
    """commsim's one-sided Mann-Whitney U tests on the samples, against scipy's: a measured winner's
    p is the largest of its tests against every other contender (the files hold no two algorithms
    that ran one schedule, so every algorithm is its own contender)."""
    mannwhitneyu = pytest.importorskip("scipy.stats").mannwhitneyu
    paths = [files["run"], files["run3"]]
    cc = commsim_report(files["bin"], paths)
    df = commsim_h5.read_points(paths)
    checked = 0
    for w in cc["winners"]["rows"]:
        assert "=" not in w["measured_winner"], w
        at = df[(df["collective"] == w["collective"]) & (df["backend"] == w["backend"]) & (df["nodes"] == w["nodes"])
                & (df["ranks"] == w["ranks"]) & (df["bytes"] == w["bytes"]) & (df["algorithm"] != "mpi")]
        winner = at[at["algorithm"] == w["measured_winner"]].iloc[0]
        ps = []
        for _, other in at.iterrows():
            if other["algorithm"] == winner["algorithm"]:
                continue
            if len(winner["samples"]) < 5 or len(other["samples"]) < 5:
                ps.append(1.0)
                continue
            ps.append(mannwhitneyu(winner["samples"], other["samples"], alternative="less", method="asymptotic").pvalue)
        assert ps, w
        assert close(w["winner_p"], max(ps), rel=1e-6), (w, ps)
        checked += 1
    assert checked > 0


def test_crossover_table_and_plot_agree(files):
    """The plot's ring/tree series and crossover markers are the report table's: the ratios come from
    its rows, and the crossovers recomputed from them in Python are the ones commsim printed."""
    r = commsim_report(files["bin"], [files["run"], files["run3"]])
    rows = report.ring_tree_series(r)
    assert rows, "the 3-rank file measured ring and tree: a row is expected"
    for x in rows:
        assert len(x["sizes"]) == len(x["predicted_ratio"]) == len(x["measured_ratio"]) >= 2
        for mine, theirs in ((x["plot_predicted"], x["predicted_bytes"]), (x["plot_measured"], x["measured_bytes"])):
            assert len(mine) == len(theirs), x
            assert all(close(a, b, rel=1e-9) for a, b in zip(mine, theirs)), x
    # The computation itself: log(ratio) from log(1/2) to log(2) between 1 and 100 crosses at 10.
    assert report.crossovers_of_ratio([1.0, 100.0], [0.5, 2.0]) == pytest.approx([10.0])
    assert report.crossovers_of_ratio([1.0, 100.0, 1e4], [0.5, 0.7, 0.9]) == []


def test_probe_file_reads_with_h5py(files):
    mpiexec = shutil.which("mpiexec")
    portrait = str(files["dir"] / "portrait.h5")
    out = run([mpiexec, "--oversubscribe", "-np", "2", files["bin"], "probe", "--sizes", "8B:64KiB:x8", "--iters", "3",
               "--warmup", "1", "--no-table", "--out", portrait])
    assert "machine portrait" in out and "inside a node" in out
    df, attrs = commsim_h5.read_probe(portrait)
    assert attrs["ranks"] == 2 and attrs["probe_version"] == 1
    assert {"pingpong", "stream", "ring-shift", "memcpy", "reduce"} <= set(df["kind"])
    assert (df["median_us"] > 0).all()
    assert "machine portrait" in attrs["portrait"]


def test_markdown_reads_as_a_verdict_worst_first(files):
    out = str(files["dir"] / "report_verdict")
    assert report.main([files["run"], files["run3"], files["pred"], "--out", out]) == 0
    md = open(os.path.join(out, "report.md")).read()
    assert md.index("## Verdict") < md.index("## Accuracy") < md.index("## Time vs size")
    for heading in ("### Where the model is wrong", "### Where it is right", "### Wrong picks, costliest first"):
        assert heading in md, heading
    section = md[md.index("### Where the model is wrong"):md.index("### Where it is right")]
    medians = [float(line.split("|")[6].strip().rstrip("%")) for line in section.splitlines()
               if line.startswith("| ") and not line.startswith("| collective")]
    assert medians == sorted(medians, reverse=True), "worst first"
    assert all(m > 100 * report.WITHIN for m in medians)
    picks = md[md.index("### Wrong picks"):md.index("## Accuracy")]
    losses = [float(line.split("|")[7].strip().rstrip("%")) for line in picks.splitlines()
              if line.startswith("| ") and not line.startswith("| collective")]
    assert losses == sorted(losses, reverse=True), "costliest first"


def test_size_axis_names_sizes_in_binary_units():
    fig, ax = report.plt.subplots()
    report.size_axis(ax, [1024, 4096, 1 << 20, 64 << 20])
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert labels[0] == "1KiB" and "1MiB" in labels and len(labels) <= 10
    assert "bytes per rank" in ax.get_xlabel()
    report.plt.close(fig)


COMMITTED_RUN = os.path.join(REPO, "results", "host-cpu-8ranks", "run1.h5")  # measured, 8 ranks


def test_svg_on_request_and_no_silent_overwrite(tmp_path):
    out = str(tmp_path / "report")
    assert report.main([COMMITTED_RUN, "--out", out, "--svg"]) == 0
    md_path = os.path.join(out, "report.md")
    md = open(md_path).read()
    for name in ("parity.svg", "error_heatmap.svg", "busbw_vs_size_allreduce.svg"):
        with open(os.path.join(out, name)) as f:
            assert "<svg" in f.read(2000), name
        assert f"({name})" in md, name
    assert not any(f.endswith(".png") for f in os.listdir(out))
    before = os.path.getmtime(md_path)
    assert report.main([COMMITTED_RUN, "--out", out]) == 2, "an existing report is refused without --force"
    assert os.path.getmtime(md_path) == before
    assert report.main([COMMITTED_RUN, "--out", out, "--force"]) == 0
    assert os.path.exists(os.path.join(out, "parity.png"))


def test_heatmap_scale_spans_the_errors_found():
    norm = report.heatmap_norm(pd.Series([0.5, 5.0, 80.0, np.nan]))
    assert norm.vmin <= 0.5 and norm.vmax >= 80.0
    bad = report.heatmap_norm(pd.Series([60.0, 90.0, 240.0]))
    assert bad.vmax >= 240.0, "errors above 50% keep their own colours"
    assert bad(60.0) < bad(90.0) < bad(240.0) <= 1.0
    good = report.heatmap_norm(pd.Series([0.0, 0.3, 2.0]))
    assert good(0.3) < good(2.0) and good.vmax >= 2.0


def test_noise_band_is_the_median_spread():
    c = pd.DataFrame({"measured_median_us": [10.0, 10.0, 10.0], "measured_p95_us": [11.0, 12.0, 30.0]})
    assert report.noise_factor(c) == pytest.approx(1.2)
    assert report.noise_factor(c.drop(columns="measured_p95_us")) == 1.0
