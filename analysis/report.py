#!/usr/bin/env python3
"""Plots and a Markdown report of commsim results files: how far the model is from the measurement.

    python3 analysis/report.py run.h5 [more.h5 ...] --out report/

writes into report/:
    parity.png                      predicted against measured time, per collective, with the machine's
                                    noise band (the points' p95/median)
    time_vs_size_<collective>.png   measured points and predicted lines per algorithm (log-log)
    busbw_vs_size_<collective>.png  bus bandwidth, measured (with its spread) and predicted
    error_heatmap.png               median |error| per size x (nodes, ranks), per collective, on a
                                    logarithmic colour scale spanning the errors found
    crossover_ring_tree.png         tree/ring time ratio, measured and predicted
    node_scaling.png                time vs node count (or rank count on one node) at a few sizes
    report.md                       the tables of `commsim report` and the figures
    report.json                     `commsim report --format json` of the files

Figures are PNG, or SVG with --svg. An --out folder that already holds a report is refused unless
--force is given (as `commsim ... --out FILE --force`).

The numbers (error statistics, winners and the samples' verdict on them, crossovers, outliers, failed
points) are those of `commsim report --format json`, which this script runs: the binary is
$COMMSIM_BIN, else build/src/runtime/commsim, else the first build-*/src/runtime/commsim. Their
definitions are in src/runtime/output/report_tables.h. The figures plot the points themselves, read
from the files with commsim.h5 (analysis/commsim/h5.py).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys

import numpy as np
import pandas as pd

import matplotlib

matplotlib.use("Agg")
import matplotlib.colors  # noqa: E402
import matplotlib.ticker  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402

from commsim import h5 as commsim_h5

SMALL_LIMIT = 64 * 1024
LARGE_START = 16 * 1024 * 1024
BANDS = ["<64KiB", "64KiB-16MiB", ">=16MiB"]  # as `commsim report` names the size bands


def band_index(nbytes: int) -> int:
    return 0 if nbytes < SMALL_LIMIT else (1 if nbytes < LARGE_START else 2)


def format_bytes(n: float) -> str:
    n = int(round(n))
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            v = n / scale
            return f"{v:g}{unit}" if v == int(v) else f"{v:.3g}{unit}"
    return f"{n}B"


def comparable(df: pd.DataFrame) -> pd.DataFrame:
    """Points in the error tables (as `commsim report` takes them): measured with status ok on two or
    more ranks, positive time, with a prediction; with their relative error `err` and size band."""
    ok = (
        (df["status"] == "ok")
        & np.isfinite(df["measured_median_us"])
        & (df["measured_median_us"] > 0)
        & np.isfinite(df["predicted_us"])
        & (df["ranks"] >= 2)  # a one-rank collective is a local copy: in no statistic, as in commsim report
    )
    c = df[ok].copy()
    c["err"] = (c["predicted_us"] - c["measured_median_us"]) / c["measured_median_us"]
    c["band"] = [band_index(int(b)) for b in c["bytes"]]
    return c


def commsim_report(files: list[str], max_outliers: int = 10) -> dict:
    """`commsim report FILES --format json`: the verdict, computed once, by commsim."""
    cmd = [commsim_h5.find_commsim("report.py"), "report", *files, "--format", "json", "--outliers", str(max_outliers)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed (exit {proc.returncode}):\n{proc.stderr.strip()}")
    return json.loads(proc.stdout)


# ---- figures

FIGURE_EXT = "png"  # "svg" with --svg
plt.rcParams.update({"font.size": 10, "axes.titlesize": 10, "axes.labelsize": 10, "legend.fontsize": 8})


def save_figure(fig, out: str, stem: str) -> str:
    """Writes the figure as <stem>.png (or .svg), its labels inside the picture; returns the file name."""
    name = f"{stem}.{FIGURE_EXT}"
    fig.savefig(os.path.join(out, name), dpi=110, bbox_inches="tight")
    plt.close(fig)
    return name


def noise_factor(c: pd.DataFrame) -> float:
    """The machine's spread: the median over points of p95 / median of the per-iteration times
    (1.0 when the files hold no p95)."""
    if "measured_p95_us" not in c:
        return 1.0
    ratio = (c["measured_p95_us"] / c["measured_median_us"]).replace([np.inf, -np.inf], np.nan).dropna()
    ratio = ratio[ratio >= 1]
    return float(ratio.median()) if len(ratio) else 1.0


def plot_parity(c: pd.DataFrame, out: str) -> str:
    """Predicted against measured time per call, one panel per collective: on the diagonal the model
    is exact; the shaded band is the machine's own noise (measured x or / the median p95/median), so a
    point inside it is as close as the machine allows. Horizontal bars: each point's median to p95."""
    colls = sorted(c["collective"].unique())
    n = max(1, len(colls))
    cols = min(n, 3)
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(5.2 * cols, 5.0 * rows), squeeze=False)
    for ax in axes.flat[n:]:
        ax.set_visible(False)
    for ax, coll in zip(axes.flat, colls):
        g = c[c["collective"] == coll]
        noise = noise_factor(g)
        lo = float(min(g["measured_median_us"].min(), g["predicted_us"].min())) / 1.5
        hi = float(max(g["measured_median_us"].max(), g["predicted_us"].max())) * 1.5
        diag = np.geomspace(lo, hi, 50)
        ax.fill_between(diag, diag / noise, diag * noise, color="0.85", lw=0, zorder=0)
        ax.plot(diag, diag, color="k", lw=0.8, zorder=1)
        names = []
        for i, (alg, a) in enumerate(sorted(g.groupby("algorithm"), key=lambda kv: kv[0])):
            color = f"C{i % 10}"
            names.append((alg, color))
            xerr = None
            if "measured_p95_us" in a:
                xerr = [np.zeros(len(a)), np.clip(a["measured_p95_us"] - a["measured_median_us"], 0, None)]
            ax.errorbar(a["measured_median_us"], a["predicted_us"], xerr=xerr, color=color, fmt="o", ms=4,
                        elinewidth=0.8, capsize=0, zorder=2)
        inside = ((g["predicted_us"] <= g["measured_median_us"] * noise) &
                  (g["predicted_us"] >= g["measured_median_us"] / noise)).mean()
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlim(lo, hi)
        ax.set_ylim(lo, hi)
        ax.set_aspect("equal")
        ax.set_xlabel("measured time per call, median (us)")
        ax.set_ylabel("predicted time per call (us)")
        ax.set_title(f"{coll}: {100 * inside:.0f}% of {len(g)} points within the noise band\n"
                     f"(shaded: measured x/÷ {noise:.2f}, the median p95/median)")
        ax.grid(True, which="both", alpha=0.3)
        from matplotlib.lines import Line2D
        handles = [Line2D([], [], color=col, marker="o", ls="none", label=nm) for nm, col in names]
        handles.append(Line2D([], [], color="k", lw=0.8, label="predicted = measured"))
        ax.legend(handles=handles, loc="upper left", framealpha=0.85)
    fig.tight_layout()
    return save_figure(fig, out, "parity")

def _groups_by_where(c: pd.DataFrame):
    return sorted(c.groupby(["collective", "backend", "nodes", "ranks"]), key=lambda kv: kv[0])


MEASURED_STYLE = dict(marker="o", ls="none", ms=5)
PREDICTED_STYLE = dict(ls="-", lw=1.6, alpha=0.75)


def size_axis(ax, sizes, label="message size (bytes per rank, binary units)") -> None:
    """A log2 size axis with ticks named 1KiB, 1MiB, ...: at most about 9 of them."""
    sizes = [float(x) for x in sizes if x > 0]
    ax.set_xscale("log", base=2)
    ax.set_xlabel(label)
    if not sizes:
        return
    lo, hi = int(math.floor(math.log2(min(sizes)))), int(math.ceil(math.log2(max(sizes))))
    step = max(1, math.ceil((hi - lo + 1) / 9))
    step = 2 * math.ceil(step / 2) if step > 1 else 1
    ticks = [2.0 ** e for e in range(lo, hi + 1) if (e - lo) % step == 0]
    ax.set_xticks(ticks)
    ax.set_xticklabels([format_bytes(t) for t in ticks], fontsize=8)
    ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())


def style_legend(ax, names_colors, loc="best") -> None:
    """One entry per algorithm (its colour), then what the marker and the line mean."""
    from matplotlib.lines import Line2D
    handles = [Line2D([], [], color=c, marker="o", lw=1.6, label=n) for n, c in names_colors]
    handles += [Line2D([], [], color="0.3", **MEASURED_STYLE, label="measured (median)"),
                Line2D([], [], color="0.3", **PREDICTED_STYLE, label="predicted (model)")]
    ax.legend(handles=handles, fontsize=7, loc=loc, framealpha=0.85)


def where_text(backend: str, nodes: int, ranks: int) -> str:
    node_word = "node" if int(nodes) == 1 else "nodes"
    return f"{backend} backend, {int(nodes)} {node_word}, {int(ranks)} ranks"


def plot_time_vs_size(c: pd.DataFrame, out: str) -> list[str]:
    files = []
    for coll, cg in sorted(c.groupby("collective"), key=lambda kv: kv[0]):
        wheres = sorted(cg.groupby(["backend", "nodes", "ranks"]), key=lambda kv: kv[0])
        n = len(wheres)
        fig, axes = plt.subplots(2, n, figsize=(6.5 * n, 6.5), squeeze=False, sharex="col",
                                 gridspec_kw={"height_ratios": [3, 1.2]})
        for col, ((backend, nodes, ranks), g) in enumerate(wheres):
            ax, axe = axes[0][col], axes[1][col]
            names = []
            for i, (alg, a) in enumerate(sorted(g.groupby("algorithm"), key=lambda kv: kv[0])):
                a = a[a["bytes"] > 0].sort_values("bytes")
                color = f"C{i % 10}"
                names.append((alg, color))
                ax.plot(a["bytes"], a["measured_median_us"], color=color, **MEASURED_STYLE)
                ax.plot(a["bytes"], a["predicted_us"], color=color, **PREDICTED_STYLE)
                axe.plot(a["bytes"], 100 * a["err"], "o-", color=color, ms=3, lw=0.8)
            ax.set_yscale("log")
            ax.set_title(f"{coll}: time per call, {where_text(backend, nodes, ranks)}")
            ax.set_ylabel("time per call (us)")
            ax.grid(True, which="both", alpha=0.3)
            style_legend(ax, names, loc="upper left")
            axe.axhline(0, color="k", lw=0.8)
            axe.set_ylabel("model error (%)\n(pred - meas) / meas")
            axe.grid(True, alpha=0.3)
            size_axis(axe, g["bytes"])
        fig.tight_layout()
        files.append(save_figure(fig, out, f"time_vs_size_{coll}"))
    return files


def plot_busbw(c: pd.DataFrame, out: str) -> list[str]:
    files = []
    for coll, cg in sorted(c.groupby("collective"), key=lambda kv: kv[0]):
        fig, ax = plt.subplots(figsize=(8, 5))
        names = []
        for i, ((alg, ranks), a) in enumerate(sorted(cg.groupby(["algorithm", "ranks"]), key=lambda kv: kv[0])):
            a = a[a["bytes"] > 0].sort_values("bytes")
            color = f"C{i % 10}"
            names.append((f"{alg}, {int(ranks)} ranks", color))
            # The measured spread: busbw at the fastest iteration above, at the p95 time below.
            spread = None
            if {"measured_min_us", "measured_p95_us"} <= set(a.columns):
                at = a["busbw_gbps"] * a["measured_median_us"]
                spread = [np.clip(a["busbw_gbps"] - at / a["measured_p95_us"], 0, None),
                          np.clip(at / a["measured_min_us"] - a["busbw_gbps"], 0, None)]
            ax.errorbar(a["bytes"], a["busbw_gbps"], yerr=spread, color=color, elinewidth=0.8, capsize=2,
                        **MEASURED_STYLE)
            if "predicted_busbw_gbps" in a:
                ax.plot(a["bytes"], a["predicted_busbw_gbps"], color=color, **PREDICTED_STYLE)
        ax.set_title(f"{coll}: bus bandwidth (nccl-tests busbw), higher is better\n"
                     "bars: measured spread, from the p95 time (below) to the fastest iteration (above)")
        ax.set_ylabel("busbw (GB/s, 1 GB = 1e9 B)")
        ax.set_ylim(bottom=0)
        ax.grid(True, which="both", alpha=0.3)
        size_axis(ax, cg["bytes"])
        style_legend(ax, names, loc="upper left")
        fig.tight_layout()
        files.append(save_figure(fig, out, f"busbw_vs_size_{coll}"))
    return files


def plot_error_heatmap(c: pd.DataFrame, out: str) -> str:
    colls = sorted(c["collective"].unique())
    wheres = max(1, c.groupby(["nodes", "ranks"]).ngroups)
    fig, axes = plt.subplots(len(colls), 1, figsize=(11, 0.8 + len(colls) * (1.3 + 0.3 * wheres)), squeeze=False,
                             layout="constrained")
    tables = {}
    for coll in colls:
        g = c[c["collective"] == coll]
        g = g.assign(abs_err=g["err"].abs(),
                     where=[f"{n} node{'s' if n != 1 else ''}, {r} ranks" for n, r in zip(g["nodes"], g["ranks"])])
        tables[coll] = g.pivot_table(index="where", columns="bytes", values="abs_err", aggfunc="median")
    norm = heatmap_norm(pd.Series(np.concatenate([100 * t.values.ravel() for t in tables.values()])))
    im = None
    for ax, coll in zip(axes[:, 0], colls):
        table = tables[coll]
        values = 100 * table.values
        im = ax.imshow(np.maximum(values, norm.vmin), aspect="auto", cmap="magma_r", norm=norm)
        for (y, x), v in np.ndenumerate(values):
            if np.isfinite(v):
                ax.text(x, y, f"{v:.0f}" if v >= 10 else f"{v:.1f}", ha="center", va="center", fontsize=7,
                        color="white" if norm(max(v, norm.vmin)) > 0.6 else "black")
        ax.set_xticks(range(len(table.columns)))
        ax.set_xticklabels([format_bytes(b) for b in table.columns], rotation=90, fontsize=8)
        ax.set_yticks(range(len(table.index)))
        ax.set_yticklabels(table.index, fontsize=8)
        ax.set_title(f"{coll}: median |model error| (%) over the algorithms, per message size per rank", fontsize=10)
    if im is not None:
        fig.colorbar(im, ax=axes[:, 0].tolist(),
                     label=f"median |error| (%), log scale from {norm.vmin:.2g} to {norm.vmax:.3g} (the largest)")
    return save_figure(fig, out, "error_heatmap")


def heatmap_norm(abs_err_pct: pd.Series) -> matplotlib.colors.LogNorm:
    """A logarithmic colour scale from the smallest error worth telling apart (0.1%, or the smallest
    found when larger) to the largest found, so that neither a good nor a bad sweep is one colour."""
    finite = abs_err_pct[np.isfinite(abs_err_pct)]
    top = float(finite.max()) if len(finite) else 1.0
    positive = finite[finite > 0]
    bottom = max(0.1, float(positive.min())) if len(positive) else 0.1
    bottom = min(bottom, top / 10) if top > 0.1 else 0.01
    return matplotlib.colors.LogNorm(vmin=bottom, vmax=max(top, bottom * 10))


def crossovers_of_ratio(sizes: list[float], ratio: list[float]) -> list[float]:
    """Where time(b) / time(a) crosses 1 between consecutive sizes: the size at which log(ratio),
    interpolated linearly in log(size), is 0. The same computation as commsim's crossover_sizes
    (src/runtime/output/verdict.cc), which gives the table's crossovers."""
    out = []
    for i in range(len(sizes) - 1):
        d0, d1 = math.log(ratio[i]), math.log(ratio[i + 1])
        if not d0 * d1 < 0:
            continue
        x0, x1 = math.log(sizes[i]), math.log(sizes[i + 1])
        out.append(math.exp(x0 + (x1 - x0) * d0 / (d0 - d1)))
    return out


def ring_tree_series(r: dict) -> list[dict]:
    """The ring/tree rows of `commsim report`'s crossovers: per (collective, backend, nodes, ranks) the
    sizes where both ran different schedules, time(tree) / time(ring) predicted and measured, and the
    crossovers recomputed from those ratios (the plot's markers; equal to the table's)."""
    rows = []
    for x in r["crossovers"]:
        if (x["a"], x["b"]) != ("ring", "tree"):
            continue
        rows.append(dict(x, plot_predicted=crossovers_of_ratio(x["sizes"], x["predicted_ratio"]),
                         plot_measured=crossovers_of_ratio(x["sizes"], x["measured_ratio"])))
    return rows


def plot_crossover(r: dict, out: str) -> str:
    """time(tree) / time(ring) against size, from the same rows as the report's crossover table, with
    the crossovers marked (dashed: predicted, dotted: measured)."""
    fig, ax = plt.subplots(figsize=(8, 5))
    names = []
    sizes = []
    rows = ring_tree_series(r)
    for i, x in enumerate(rows):
        color = f"C{i % 10}"
        names.append((f"{x['collective']}, {where_text(x['backend'], x['nodes'], x['ranks'])}", color))
        ax.plot(x["sizes"], x["measured_ratio"], color=color, **MEASURED_STYLE)
        ax.plot(x["sizes"], x["predicted_ratio"], color=color, **PREDICTED_STYLE)
        for b in x["plot_predicted"]:
            ax.axvline(b, color=color, ls="--", lw=0.9)
        for b in x["plot_measured"]:
            ax.axvline(b, color=color, ls=":", lw=1.2)
        sizes += x["sizes"]
    drew = bool(rows)
    ax.axhline(1.0, color="k", lw=0.8)
    ax.set_yscale("log")
    ax.set_ylabel("time(tree) / time(ring)\nbelow 1: tree faster, above 1: ring faster")
    ax.set_title("ring vs tree: where the faster one changes (dashed: predicted, dotted: measured)" if drew
                 else "ring vs tree: not both measured as different schedules")
    ax.grid(True, which="both", alpha=0.3)
    size_axis(ax, sizes)
    if drew:
        style_legend(ax, names)
    fig.tight_layout()
    return save_figure(fig, out, "crossover_ring_tree")


def plot_scaling(c: pd.DataFrame, out: str) -> str:
    multi_node = c["nodes"].nunique() > 1
    axis = "nodes" if multi_node else "ranks"
    sizes = sorted(c["bytes"].unique())
    picks = sorted({sizes[0], sizes[len(sizes) // 2], sizes[-1]}) if sizes else []
    fig, axes = plt.subplots(1, max(len(picks), 1), figsize=(5.5 * max(len(picks), 1), 4.5), squeeze=False)
    for ax, nbytes in zip(axes[0], picks):
        g = c[c["bytes"] == nbytes]
        names = []
        for i, ((coll, alg), a) in enumerate(sorted(g.groupby(["collective", "algorithm"]), key=lambda kv: kv[0])):
            a = a.groupby(axis).first().sort_index()
            color = f"C{i % 10}"
            names.append((f"{coll} {alg}", color))
            ax.plot(a.index, a["measured_median_us"], color=color, **MEASURED_STYLE)
            ax.plot(a.index, a["predicted_us"], color=color, **PREDICTED_STYLE)
        ax.set_xlabel(f"{'node' if multi_node else 'rank'} count")
        ax.set_ylabel("time per call (us)")
        ax.set_yscale("log")
        ax.set_title(f"{format_bytes(nbytes)} per rank: time vs {'node' if multi_node else 'rank'} count")
        ax.grid(True, which="both", alpha=0.3)
        style_legend(ax, names)
    fig.tight_layout()
    return save_figure(fig, out, "node_scaling")


# ---- Markdown


def pct(x: float) -> str:
    return f"{100 * x:.1f}%"


WITHIN = 0.10  # a group whose median |error| is at most this is "right"


def why(group: dict, signed_median: float) -> str:
    """What a group's error says: a bias one way (and the terms that dominate at those sizes), or scatter."""
    if abs(signed_median) < 0.5 * group["median_abs_rel_error"]:
        return "off both ways: the measurement scatters, or the model's shape misses"
    direction = "slower than predicted" if signed_median < 0 else "faster than predicted"
    term = {"<64KiB": "the latency (alpha) terms set the time here",
            "64KiB-16MiB": "latency and bandwidth terms both count here",
            ">=16MiB": "the bandwidth (beta) and reduction (gamma) terms set the time here"}[group["band"]]
    return f"measured {direction}; {term}"


def verdict_lines(r: dict, c: pd.DataFrame) -> list[str]:
    s, w = r["summary"], r["winners"]
    groups = [dict(g) for g in r["groups"]]
    for g in groups:
        sel = c[(c["collective"] == g["collective"]) & (c["algorithm"] == g["algorithm"]) &
                (c["backend"] == g["backend"]) & (c["band"] == BANDS.index(g["band"]))]
        g["signed"] = float(np.median(sel["err"])) if len(sel) else 0.0
    wrong = sorted((g for g in groups if g["median_abs_rel_error"] > WITHIN),
                   key=lambda g: g["median_abs_rel_error"], reverse=True)
    right = sorted((g for g in groups if g["median_abs_rel_error"] <= WITHIN), key=lambda g: g["median_abs_rel_error"])
    lines = ["## Verdict", ""]
    lines.append(f"- The model is {pct(s['all']['median_abs_rel_error'])} off at the median over {s['all']['n']} "
                 f"measured points: {pct(s['below_64KiB']['median_abs_rel_error'])} below 64 KiB, "
                 f"{pct(s['from_64KiB']['median_abs_rel_error'])} from 64 KiB (worst point "
                 f"{pct(s['all']['max_abs_rel_error'])}).")
    m = r.get("machine_against_itself", {})
    if m.get("points"):
        lines.append(f"- The machine differs from itself by {pct(m['median_abs_rel_diff'])} at the median over the "
                     f"{m['points']} points measured in two of the files: no model can be judged more closely.")
    for name in r.get("uncalibrated_topologies", []):
        lines.append(f"- Topology '{name}' is not calibrated for this machine (no calibrated: section): "
                     "`commsim probe`, then `commsim calibrate`.")
    lines.append(f"- {len(right)} of {len(groups)} (collective, algorithm, size band) groups are within "
                 f"{pct(WITHIN)} at the median; {len(wrong)} are not (listed worst first below).")
    if w["cases"]:
        lines.append(f"- It picks the measured fastest algorithm in {w['agree']} of {w['cases']} cases "
                     f"({pct(w['agreement'])}); its pick is within 5% of the fastest in {w['within_5pct']}, and "
                     f"measurably slower (beyond the noise) in {w['pick_slower']}.")
    lines += ["", "### Where the model is wrong (median |error| above "
              f"{pct(WITHIN)}, worst first)", ""]
    if wrong:
        lines += ["| collective | algorithm | backend | sizes | points | median abs. error | median signed | why |",
                  "|---|---|---|---|---:|---:|---:|---|"]
        for g in wrong:
            lines.append(f"| {g['collective']} | {g['algorithm']} | {g['backend']} | {g['band']} | {g['n']} | "
                         f"{pct(g['median_abs_rel_error'])} | {100 * g['signed']:+.1f}% | {why(g, g['signed'])} |")
    else:
        lines.append("none")
    lines += ["", f"### Where it is right (median |error| at most {pct(WITHIN)})", ""]
    if right:
        lines += ["| collective | algorithm | backend | sizes | points | median abs. error |", "|---|---|---|---|---:|---:|"]
        for g in right:
            lines.append(f"| {g['collective']} | {g['algorithm']} | {g['backend']} | {g['band']} | {g['n']} | "
                         f"{pct(g['median_abs_rel_error'])} |")
    else:
        lines.append("none")
    picks = sorted((x for x in w["rows"] if not x["agree"]), key=lambda x: x["loss"], reverse=True)
    lines += ["", "### Wrong picks, costliest first", ""]
    if picks:
        lines += ["| collective | nodes | ranks | size | model picks | measured fastest | time lost | beyond noise |",
                  "|---|---:|---:|---:|---|---|---:|---|"]
        for x in picks[:15]:
            lines.append(f"| {x['collective']} | {x['nodes']} | {x['ranks']} | {format_bytes(x['bytes'])} | "
                         f"{x['predicted_winner']} | {x['measured_winner']} | {pct(x['loss'])} | "
                         f"{'yes' if x['pick_slower'] else 'no'} |")
        if len(picks) > 15:
            lines.append(f"\n... and {len(picks) - 15} more in the Winners table below.")
    else:
        lines.append("none: the model picked the measured fastest everywhere")
    return lines


def binding_notes(files: list[str]) -> list[str]:
    """How each run's ranks were bound to CPUs, from the files' run contexts."""
    notes = []
    for path in files:
        for run in commsim_h5.read_runs(path).itertuples():
            binding = getattr(run, "cpu_binding", "")
            if isinstance(binding, str) and binding:
                notes.append(f"{path}: run {int(run.index)}: {int(run.ranks)} {run.backend} ranks; CPUs: {binding}")
    return notes


def write_markdown(r: dict, figures: dict, out: str, c: pd.DataFrame) -> None:
    s = r["summary"]
    lines = ["# commsim report: how far the model is from the measurement", ""]
    lines.append(f"Files: {', '.join(r['files'])}. {r['points']} points, {r['measured']} measured, "
                 f"{r['compared']} compared with the model. Error = (predicted - measured median) / measured median.")
    for n in r["run_notes"] + binding_notes(r["files"]):
        lines.append(f"- {n}")
    lines += [""] + verdict_lines(r, c)
    lines += ["", "## Accuracy", "", "| sizes | points | median abs. error | geomean abs. error | max abs. error |",
              "|---|---:|---:|---:|---:|"]
    for label, key in (("all", "all"), ("below 64 KiB", "below_64KiB"), ("64 KiB and above", "from_64KiB")):
        x = s[key]
        lines.append(f"| {label} | {x['n']} | {pct(x['median_abs_rel_error'])} | {pct(x['geomean_abs_rel_error'])} | "
                     f"{pct(x['max_abs_rel_error'])} |")
    w = r["winners"]
    lines += ["", f"The model picked the measured winner in {w['agree']} of {w['cases']} cases "
              f"({pct(w['agreement'])}); its pick measured within 5% of the best in {w['within_5pct']}.", "",
              f"The measured winner is clear (faster than every other schedule, one-sided Mann-Whitney U test on "
              f"the per-iteration samples, p < {w['alpha']:g}) in {w['clear']} cases: the model picked it in "
              f"{w['clear_agree']} ({pct(w['clear_agree'] / w['clear'] if w['clear'] else 0.0)}). The model's pick "
              f"measured slower than the winner beyond the noise in {w['pick_slower']} of {w['cases']} cases.", ""]
    lines += ["## Predicted against measured", "",
              "On the diagonal the model is exact; in the shaded band it is as close as the machine's own "
              "noise (p95/median of the iterations) allows.", "", f"![parity]({figures['parity']})", ""]
    lines += ["## Time vs size", "", "Dots: measured median per call; lines: the model; lower panel: the model's error.", ""]
    lines += [f"![{f}]({f})" for f in figures["time"]]
    lines += ["", "## Bus bandwidth vs size", ""]
    lines += [f"![{f}]({f})" for f in figures["busbw"]]
    lines += ["", "## Error heatmap", "", f"![error heatmap]({figures['heatmap']})", "",
              "## Ring vs tree crossover", "", f"![crossover]({figures['crossover']})", ""]
    if r["crossovers"]:
        lines += ["| collective | nodes | ranks | a | b | predicted crossover | measured crossover |", "|---|---:|---:|---|---|---|---|"]
        for x in r["crossovers"]:
            if not x["predicted_bytes"] and not x["measured_bytes"]:
                continue
            p = ", ".join(format_bytes(b) for b in x["predicted_bytes"]) or "none"
            m = ", ".join(format_bytes(b) for b in x["measured_bytes"]) or "none"
            lines.append(f"| {x['collective']} | {x['nodes']} | {x['ranks']} | {x['a']} | {x['b']} | {p} | {m} |")
    lines += ["", "## Scaling", "", f"![scaling]({figures['scaling']})", "",
              "## Error per collective x algorithm x size band", "",
              "| collective | algorithm | backend | band | n | median | geomean | max |", "|---|---|---|---|---:|---:|---:|---:|"]
    for g in r["groups"]:
        lines.append(f"| {g['collective']} | {g['algorithm']} | {g['backend']} | {g['band']} | {g['n']} | "
                     f"{pct(g['median_abs_rel_error'])} | {pct(g['geomean_abs_rel_error'])} | {pct(g['max_abs_rel_error'])} |")
    lines += ["", "## Winners", "",
              "| collective | nodes | ranks | bytes | predicted | measured | loss |", "|---|---:|---:|---:|---|---|---:|"]
    for x in w["rows"]:
        lines.append(f"| {x['collective']} | {x['nodes']} | {x['ranks']} | {format_bytes(x['bytes'])} | "
                     f"{x['predicted_winner']} | {x['measured_winner']} | {pct(x['loss'])} |")
    lines += ["", "## Worst outliers", "", "| point | measured (us) | predicted (us) | error |", "|---|---:|---:|---:|"]
    for o in r["outliers"]:
        lines.append(f"| {o['collective']} {o['algorithm']} {o['backend']} {o['nodes']}n {o['ranks']}r "
                     f"{format_bytes(o['bytes'])} | {o['measured_median_us']:.2f} | {o['predicted_us']:.2f} | {pct(o['rel_error'])} |")
    lines += ["", "## Failed or missing points", ""]
    lines += [f"- {p['collective']} {p['algorithm']} {p['backend']} {p['nodes']}n {p['ranks']}r "
              f"{format_bytes(p['bytes'])}: {x['why']}" for x in r["failed"] for p in [x["point"]]] or ["none"]
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write("\n".join(lines) + "\n")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="+", help="commsim results files (.h5)")
    ap.add_argument("--out", default="report", help="folder for the figures and report.md (created)")
    ap.add_argument("--outliers", type=int, default=10, help="how many outliers to list")
    ap.add_argument("--force", action="store_true", help="overwrite a report already in --out")
    ap.add_argument("--svg", action="store_true", help="write the figures as SVG instead of PNG")
    args = ap.parse_args(argv)
    global FIGURE_EXT
    FIGURE_EXT = "svg" if args.svg else "png"
    existing = [f for f in ("report.md", "report.json") if os.path.exists(os.path.join(args.out, f))]
    if existing and not args.force:
        print(f"report.py: {args.out}/ already holds {', '.join(existing)}; give --force to overwrite it, or "
              "another --out", file=sys.stderr)
        return 2
    df = commsim_h5.read_points(args.files)
    if df.empty:
        print("report.py: the files hold no points", file=sys.stderr)
        return 1
    os.makedirs(args.out, exist_ok=True)
    r = commsim_report(args.files, args.outliers)
    c = comparable(df)
    if c.empty:
        print("report.py: no point has both a measurement and a prediction; plots need both", file=sys.stderr)
        return 1
    figures = {
        "parity": plot_parity(c, args.out),
        "time": plot_time_vs_size(c, args.out),
        "busbw": plot_busbw(c, args.out),
        "heatmap": plot_error_heatmap(c, args.out),
        "crossover": plot_crossover(r, args.out),
        "scaling": plot_scaling(c, args.out),
    }
    write_markdown(r, figures, args.out, c)
    with open(os.path.join(args.out, "report.json"), "w") as f:
        json.dump(r, f, indent=1)
    s = r["summary"]
    print(f"report.py: {r['compared']} points compared; median |error| {pct(s['below_64KiB']['median_abs_rel_error'])} "
          f"below 64 KiB, {pct(s['from_64KiB']['median_abs_rel_error'])} from 64 KiB; winner agreement "
          f"{pct(r['winners']['agreement'])}; wrote {args.out}/report.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
