#!/usr/bin/env python3
"""Refit the model on stored runs and judge it on the run it was fitted on and on the other one.

Each folder holds what `analysis/accuracy.sh` writes: `portrait.h5` (`commsim probe`) and two runs of
the same sweep, `run1.h5` and `run2.h5`. For each folder and each run N, every term of the model is
refitted on run N (`commsim calibrate portrait.h5 runN.h5 --refine all`) and the fit is judged by
`commsim report --topology` twice: on run N itself (in-sample) and on the other run
(out-of-sample, the measurements the fit never saw).

What it tells apart: if the model picks the measured fastest algorithm no more often on the very
measurements it was fitted to than on a new run, its misses do not come from the machine moving
between runs, but from near ties (which the samples cannot tell apart) and from the model's form.
The clear in-sample misses (the model's pick slower than the fastest beyond the noise, one-sided
Mann-Whitney U test, p < 0.05) are listed by case: those that repeat over rounds are the terms of the
model to look at.

    analysis/refit.py DIR [DIR ...] [--jobs N] [--keep FITDIR] [--refine all|gamma] [--base TOPOLOGY]
                      [--min-rounds K]

The binary is $COMMSIM_BIN, else build/src/runtime/commsim, else the first build-*/src/runtime/commsim
of the repository. Nothing is written into the folders: the fits go to a temporary folder (or to
FITDIR/<folder name>/fitN.yaml with --keep).
"""

import argparse
import collections
import concurrent.futures
import json
import os
import shutil
import subprocess
import sys
import tempfile

from commsim import h5 as commsim_h5


def find_binary():
    return commsim_h5.find_commsim("refit.py")


def run(cmd):
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed (exit {proc.returncode}):\n{proc.stderr.strip()}")
    return proc.stdout


# One round: the fit on run `fit_on` of `folder`, judged on both runs.
Round = collections.namedtuple("Round", "folder fit_on ranks own other")


def one_round(binary, folder, fit_on, fit_dir, refine, base, threads):
    fit = os.path.join(fit_dir, f"fit{fit_on}.yaml")
    run([binary, "calibrate", os.path.join(folder, "portrait.h5"), os.path.join(folder, f"run{fit_on}.h5"),
         "--refine", refine, "--keep-refit", "--out", fit, "--force", "--threads", str(threads)]
        + (["--base", base] if base else []))
    judged = {}
    for which, n in (("own", fit_on), ("other", 3 - fit_on)):
        judged[which] = json.loads(run([binary, "report", os.path.join(folder, f"run{n}.h5"), "--topology", fit,
                                        "--format", "json"]))
    ranks = sorted({row["ranks"] for row in judged["own"]["winners"]["rows"]})
    return Round(folder, fit_on, ranks, judged["own"], judged["other"])


def pct(a, b):
    return f"{100.0 * a / b:.1f}%" if b else "-"


def err(summary, band):
    s = summary.get(band)
    return f"{100.0 * s['median_abs_rel_error']:.1f}%" if s and s.get("n") else "-"


COUNTS = ("cases", "agree", "within_5pct", "clear", "clear_agree", "pick_slower")
HEADER_PICKS = f"{'fastest picked':>18s} {'within 5%':>10s} {'clear winners picked':>21s} {'slower':>6s}"
HEADER = HEADER_PICKS + f" {'|err| <64KiB':>12s} {'>=64KiB':>8s}"


def cells(reports):
    """The columns of HEADER for one judgement or the sum of several."""
    t = {k: sum(r["winners"][k] for r in reports) for k in COUNTS}
    line = (f"{t['agree']:>7d}/{t['cases']:<4d}{pct(t['agree'], t['cases']):>6s} {pct(t['within_5pct'], t['cases']):>10s}"
            f" {t['clear_agree']:>9d}/{t['clear']:<4d}{pct(t['clear_agree'], t['clear']):>7s} {t['pick_slower']:>6d}")
    if len(reports) == 1:
        line += f" {err(reports[0]['summary'], 'below_64KiB'):>12s} {err(reports[0]['summary'], 'from_64KiB'):>8s}"
    return line


def main(argv=None):
    ap = argparse.ArgumentParser(
        description="Refit the model on each stored run (calibrate --refine) and judge it on that run "
                    "(in-sample) and on the other run of the folder (out-of-sample).")
    ap.add_argument("folders", nargs="+", metavar="DIR",
                    help="folders of analysis/accuracy.sh: portrait.h5, run1.h5 and run2.h5")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="refits at once (default: the CPUs)")
    ap.add_argument("--keep", metavar="FITDIR", help="keep the fits as FITDIR/<folder>/fitN.yaml")
    ap.add_argument("--refine", default="all", choices=["all", "gamma"], help="what calibrate refits (default all)")
    ap.add_argument("--base", metavar="TOPOLOGY",
                    help="the topology calibrate starts from (e.g. h200-node for GPU ranks; default: its own choice)")
    ap.add_argument("--min-rounds", type=int, default=2,
                    help="list the clear in-sample misses that repeat in at least this many rounds (default 2)")
    args = ap.parse_args(argv)
    if args.jobs < 1:
        sys.exit(f"refit.py: --jobs must be at least 1, got {args.jobs}")
    if args.min_rounds < 1:
        sys.exit(f"refit.py: --min-rounds must be at least 1, got {args.min_rounds}")
    for d in args.folders:
        missing = [f for f in ("portrait.h5", "run1.h5", "run2.h5") if not os.path.isfile(os.path.join(d, f))]
        if missing:
            sys.exit(f"refit.py: {d} has no {', '.join(missing)} (a folder of analysis/accuracy.sh is needed)")
    names = [os.path.basename(os.path.normpath(d)) for d in args.folders]
    if len(set(names)) != len(names):
        sys.exit("refit.py: two folders have the same name; the fits are kept by folder name")
    binary = find_binary()
    threads = max(1, (os.cpu_count() or 1) // args.jobs)  # each refit's own threads (calibrate --threads)
    work = args.keep or tempfile.mkdtemp(prefix="commsim-refit-")
    rounds = []
    try:
        jobs = []
        with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
            for d, name in zip(args.folders, names):
                os.makedirs(os.path.join(work, name), exist_ok=True)
                for fit_on in (1, 2):
                    jobs.append(pool.submit(one_round, binary, d, fit_on, os.path.join(work, name), args.refine,
                                            args.base, threads))
            for i, job in enumerate(concurrent.futures.as_completed(jobs), 1):
                try:
                    rounds.append(job.result())
                except RuntimeError as e:
                    for j in jobs:
                        j.cancel()
                    sys.exit(f"refit.py: {e}")
                print(f"  refitted {i}/{len(jobs)}", file=sys.stderr, flush=True)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    rounds.sort(key=lambda r: (r.folder, r.fit_on))

    print("Each round: every term of the model refitted on run N of the folder, judged on run N itself")
    print("(in-sample) and on the other run (out-of-sample): the measured fastest picked, the pick measured")
    print("within 5% of the fastest, the clear winners picked, the pick slower than the fastest beyond the")
    print("noise (one-sided Mann-Whitney U test, p < 0.05), median |error| below and from 64 KiB.")
    print()
    width = max(len(n) for n in names) + 9
    print(f"{'folder, fitted on':{width}s} {'ranks':>6s}  {'judged on':13s} {HEADER}")
    for r in rounds:
        label = f"{os.path.basename(os.path.normpath(r.folder))} run{r.fit_on}"
        print(f"{label:{width}s} {','.join(map(str, r.ranks)):>6s}  {'in-sample':13s} {cells([r.own])}")
        print(f"{'':{width}s} {'':6s}  {'out-of-sample':13s} {cells([r.other])}")
    print()
    by_ranks = collections.defaultdict(list)
    for r in rounds:
        by_ranks[",".join(map(str, r.ranks))].append(r)
    groups = [(f"{k or 'no'} ranks", v)
              for k, v in sorted(by_ranks.items(), key=lambda kv: [int(x) for x in kv[0].split(",") if x])]
    if len(groups) > 1:
        groups.append(("all", rounds))
    print(f"{'totals':{width}s} {'rounds':>6s}  {'judged on':13s} {HEADER_PICKS}")
    for label, rs in groups:
        print(f"{label:{width}s} {len(rs):>6d}  {'in-sample':13s} {cells([r.own for r in rs])}")
        print(f"{'':{width}s} {'':6s}  {'out-of-sample':13s} {cells([r.other for r in rs])}")
    # The clear in-sample misses: the model's pick slower than the fastest beyond the noise.
    misses = collections.Counter()
    for r in rounds:
        for row in r.own["winners"]["rows"]:
            if row["pick_slower"]:
                misses[(row["ranks"], row["collective"], row["bytes"], row["predicted_winner"],
                        row["measured_winner"])] += 1
    total = sum(misses.values())
    print()
    print(f"Clear in-sample misses: {total} over {len(rounds)} rounds; those in at least {args.min_rounds} rounds:")
    shown = [(k, n) for k, n in misses.items() if n >= args.min_rounds]
    if not shown:
        print("  none")
    for (ranks, coll, nbytes, pick, fastest), n in sorted(shown, key=lambda kn: (-kn[1], kn[0])):
        print(f"  {n:3d} rounds  {ranks:3d} ranks  {coll:14s} {fmt_bytes(nbytes):>8s}  model picks {pick},"
              f" measured fastest {fastest}")
    return 0


def fmt_bytes(n):
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size and n % size == 0:
            return f"{n // size} {unit}"
    return f"{n} B"


if __name__ == "__main__":
    sys.exit(main())
