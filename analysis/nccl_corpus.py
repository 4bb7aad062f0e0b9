#!/usr/bin/env python3
"""NCCL's model judged on the published nccl-tests record.

Each setup of tests/data/nccl-tests/ (one <id>.csv with its raw log raw/<id>.txt, each with its
source) is imported with `commsim import` onto the preset that describes its machine from public
specifications (configs/topologies/; none of them is fitted to these logs), and `commsim report`
compares NCCL's model with what was measured. Printed per setup: the points compared, the median
|error| below 64 KiB and from 64 KiB, the signed median error (+: the model is slower than the
measurement) and, where the log names what NCCL ran at each size (NCCL's per-call `Algo X proto Y`
lines, NCCL_DEBUG_SUBSYS=TUNING, which `commsim import` keeps per row), how often NCCL's model
(`commsim predict --algorithms nccl`) picks the same algorithm and protocol; then the totals.

    analysis/nccl_corpus.py [--data DIR] [--markdown] [--only SUBSTRING] [--holdout]

--holdout: each setup's import is also calibrated with `commsim calibrate FILE.h5 --out fitted.yaml`
(no probe: NCCL's model alone, fitted on every other size) and the sizes between are judged; the
table gains the median |error| of those held-out sizes below and from 64 KiB.

The binary is $COMMSIM_BIN, else build/src/runtime/commsim. Out-of-place rows are judged (the
in-place rows of nccl-tests repeat them)."""

import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile

from commsim import h5 as commsim_h5

# setup id prefix -> (preset, nodes, GPUs per node). Machines as each file's header describes them
# (`gpu`, `gpus_per_node`, `nodes`, `intra_node_link`, `nics`, `cloud_instance`):
#  - h100sxm_nvs_gN: one 8x H100 SXM NVSwitch host, N of its GPUs used (-g N);
#  - nvidia_dgxc_h100_1n, rjun_h100_*: DGX/HGX H100 nodes (8 GPUs, NVSwitch, 400G InfiniBand);
#  - oci_tut_a100_1n: OCI BM.GPU4.8; polaris_*: ALCF Polaris; aws_p4d*/p4de: AWS p4d/p4de;
#  - rtx4090x8_*: 8x RTX 4090 on PCIe; oci_gb300_*: GB300 NVL72 hosts of 4 GPUs.
SETUPS = [
    ("h100sxm_nvs_g2_", "dgx-h100", 1, 2),
    ("h100sxm_nvs_g4_", "dgx-h100", 1, 4),
    ("h100sxm_nvs_g6_", "dgx-h100", 1, 6),
    ("nvidia_dgxc_h100_1n", "dgx-h100", 1, 8),
    ("rjun_h100_10n_g1", "dgx-h100", 10, 1),
    ("rjun_h100_10n_g2", "dgx-h100", 10, 2),
    ("rjun_h100_10n_g4", "dgx-h100", 10, 4),
    ("rjun_h100_10n_g8", "dgx-h100", 10, 8),
    ("rjun_h100_1n_g4", "dgx-h100", 1, 4),
    ("rjun_h100_1n_g8", "dgx-h100", 1, 8),
    ("oci_tut_a100_1n", "oci-a100", 1, 8),
    ("polaris_a100_2n_", "polaris", 2, 4),
    ("polaris_a100_8n_", "polaris", 8, 4),
    ("polaris_a100_256n_", "polaris", 256, 4),
    ("polaris_a100_540n_", "polaris", 540, 4),
    ("aws_p4d", "aws-p4d", 2, 8),
    ("rtx4090x8_", "consumer-pcie-4090", 1, 8),
    ("oci_gb300_1n", "gb300-nvl72", 1, 4),
    ("oci_gb300_2n", "gb300-nvl72", 2, 4),
    ("oci_gb300_16n", "gb300-nvl72", 16, 4),
    ("oci_gb300_32n", "gb300-nvl72", 32, 4),
]

COLLECTIVES = {"all_reduce": "allreduce", "all_gather": "allgather", "reduce_scatter": "reducescatter",
               "alltoall": "alltoall", "sendrecv": "sendrecv", "broadcast": "broadcast", "reduce": "reduce"}


def setup_of(setup_id):
    for prefix, preset, nodes, gpn in SETUPS:
        if setup_id.startswith(prefix):
            return preset, nodes, gpn
    return None


def header(csv_path):
    meta = {}
    collectives = []
    with open(csv_path) as f:
        for line in f:
            if line.startswith("# ") and ":" in line:
                key, _, value = line[2:].partition(":")
                meta.setdefault(key.strip(), value.strip())
            elif not line.startswith("#") and "," in line and not line.startswith("collective,"):
                c = line.split(",", 1)[0]
                if c not in collectives:
                    collectives.append(c)
    return meta, collectives


def forced(meta, name):
    env = meta.get("env", "")
    for word in env.replace(";", " ").replace(",", " ").split():
        if word.startswith(name + "="):
            return word.split("=", 1)[1]
    return ""


def run(cmd):
    return subprocess.run(cmd, capture_output=True, text=True)


def judge(binary, data, setup_id, workdir, holdout_mode=False):
    preset, nodes, gpn = setup_of(setup_id)
    meta, collectives = header(os.path.join(data, setup_id + ".csv"))
    raw = os.path.join(data, "raw", setup_id + ".txt")
    rows = []
    for coll in collectives:
        out = os.path.join(workdir, f"{setup_id}-{coll}.h5")
        cmd = [binary, "import", raw, "--out", out, "--force", "--topology", preset, "--nodes", str(nodes),
               "--gpus-per-node", str(gpn), "--collective", COLLECTIVES.get(coll, coll), "--placement",
               "out-of-place"]
        for name, opt in (("NCCL_ALGO", "--nccl-algo"), ("NCCL_PROTO", "--nccl-proto")):
            value = forced(meta, name)
            if value:
                cmd += [opt, value]
        r = run(cmd)
        if r.returncode != 0:
            # A log of several collectives: the import of one collective reads its own table only when
            # the log names them; otherwise the whole file is that collective.
            rows.append({"collective": coll, "error": r.stderr.strip().splitlines()[-1] if r.stderr else "failed"})
            continue
        rep = run([binary, "report", out, "--format", "json"])
        verdict = json.loads(rep.stdout) if rep.returncode == 0 else {}
        pts = commsim_h5.read_points(out)
        # Rows of no elements (a size below one element per rank, printed as size 0) launch
        # nothing: NCCL returns at once, so there is no collective to judge.
        pts = pts[(pts["collective"] == COLLECTIVES.get(coll, coll)) & (pts["bytes"] > 0)]
        rel = ((pts["predicted_us"] - pts["measured_median_us"]) / pts["measured_median_us"]).dropna()
        picks, same = pick_named(binary, pts, preset, nodes, gpn, COLLECTIVES.get(coll, coll), verdict)
        small = rel[pts.loc[rel.index, "bytes"] < 65536].abs()
        large = rel[pts.loc[rel.index, "bytes"] >= 65536].abs()
        held = holdout(binary, out, workdir, COLLECTIVES.get(coll, coll)) if holdout_mode else None
        rows.append({"held": held, "collective": coll, "n": len(rel),
                     "below": statistics.median(small) if len(small) else None,
                     "from": statistics.median(large) if len(large) else None,
                     "signed": statistics.median(rel) if len(rel) else None,
                     "picks": picks, "same": same})
    return preset, nodes, gpn, meta, rows


# commsim's forced NCCL algorithms by NCCL's names, as the per-call lines and nccl_algo spell them.
NCCL_NAMES = {"nccl-ring": "Ring", "nccl-tree": "Tree", "nccl-nvls": "NVLS", "nccl-nvlstree": "NVLSTree",
              "nccl-collnet-direct": "CollNetDirect", "nccl-collnet-chain": "CollNetChain", "nccl-pat": "PAT"}


def model_picks(binary, preset, nodes, gpn, collective, sizes):
    """NCCL's model's pick per size, as `commsim predict --algorithms nccl` names it in its note
    ("NCCL's model picks nccl-nvls/Simple"), in NCCL's spelling: {bytes: "NVLS/Simple"}."""
    r = run([binary, "predict", "--topology", preset, "--collectives", collective, "--algorithms", "nccl",
             "--sizes", ",".join(str(b) for b in sizes), "--nodes", str(nodes), "--gpus-per-node", str(gpn),
             "--format", "csv"])
    picks = {}
    if r.returncode != 0:
        return picks
    lines = r.stdout.splitlines()
    head = next((i for i, l in enumerate(lines) if l.startswith("collective,")), None)
    if head is None:
        return picks
    for row in csv.DictReader(lines[head:]):
        note = row.get("note", "")
        if note.startswith("NCCL's model picks "):
            algo, _, proto = note.split()[-1].partition("/")
            picks[int(row["bytes"])] = NCCL_NAMES.get(algo, algo) + "/" + proto
    return picks


def pick_named(binary, pts, preset, nodes, gpn, collective, verdict):
    """Sizes where the log names what NCCL ran (per-call `Algo X proto Y` lines, imported into
    nccl_algo / nccl_proto), and how many of them NCCL's model picks the same for: (picks, same).
    Where a setup measured forced variants instead, report's NCCL-choice rows say it."""
    logged = pts[(pts["algorithm"] == "nccl") & (pts["nccl_algo"] != "")]
    if len(logged):
        model = model_picks(binary, preset, nodes, gpn, collective, sorted(set(int(b) for b in logged["bytes"])))
        ran = [(int(b), f"{a}/{p}") for b, a, p in zip(logged["bytes"], logged["nccl_algo"], logged["nccl_proto"])]
        return len(ran), sum(1 for b, pick in ran if model.get(b) == pick)
    rows = [x for x in verdict.get("nccl_choices", {}).get("rows", []) if x.get("nccl_pick")]
    return len(rows), sum(1 for x in rows if x["nccl_pick"] == x.get("model_pick"))


def holdout(binary, h5, workdir, collective):
    """`commsim calibrate` on an imported file (NCCL's model alone, fitted on every other size):
    the median |error| of the held-out sizes below and from 64 KiB, (None, None) when it cannot fit."""
    r = run([binary, "calibrate", h5, "--out", os.path.join(workdir, "fitted.yaml"), "--force", "--collectives",
             collective])
    small, large = [], []
    for line in r.stdout.splitlines():
        words = line.split()
        if r.returncode == 0 and words[:1] == ["held-out"] and len(words) == 5:
            size, err = int(words[2]), abs(float(words[4].rstrip("%")) / 100)
            if size > 0:
                (small if size < 65536 else large).append(err)
    return (statistics.median(small) if small else None, statistics.median(large) if large else None)


def pct(x):
    return "-" if x is None else f"{100 * x:+.1f}%" if x < 0 else f"{100 * x:.1f}%"


def main():
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=os.path.join(here, "tests", "data", "nccl-tests"),
                    help="folder of <id>.csv and raw/<id>.txt (default: tests/data/nccl-tests)")
    ap.add_argument("--only", default="", help="judge only the setups whose id contains this")
    ap.add_argument("--markdown", action="store_true", help="print a Markdown table")
    ap.add_argument("--holdout", action="store_true",
                    help="also calibrate each setup on every other size and judge the sizes between")
    args = ap.parse_args()
    binary = commsim_h5.find_commsim("nccl_corpus.py")
    ids = sorted(f[:-4] for f in os.listdir(args.data) if f.endswith(".csv") and args.only in f)
    sep = " | " if args.markdown else "  "
    cols = ["setup", "topology", "nodes x GPUs", "collective", "n", "|err| <64KiB", "|err| >=64KiB", "signed",
            "NCCL's pick named"] + (["held-out <64KiB", "held-out >=64KiB"] if args.holdout else [])
    if args.markdown:
        print("| " + " | ".join(cols) + " |\n|" + "---|" * len(cols))
    else:
        print("#" + sep.join(f"{c:>14}" for c in cols))
    per_setup_below, per_setup_from, within10, judged, picks, same, skipped = [], [], 0, 0, 0, 0, []
    held_below, held_from = [], []
    with tempfile.TemporaryDirectory() as work:
        for sid in ids:
            if setup_of(sid) is None:
                skipped.append(f"{sid}: no preset mapped")
                continue
            preset, nodes, gpn, meta, rows = judge(binary, args.data, sid, work, args.holdout)
            for r in rows:
                if "error" in r:
                    skipped.append(f"{sid} {r['collective']}: {r['error']}")
                    continue
                judged += 1
                if r["below"] is not None:
                    per_setup_below.append(r["below"])
                if r["from"] is not None:
                    per_setup_from.append(r["from"])
                worst = max(x for x in (r["below"], r["from"]) if x is not None)
                within10 += worst <= 0.10
                picks += r["picks"]
                same += r["same"]
                cells = [sid, preset, f"{nodes} x {gpn}", r["collective"], str(r["n"]), pct(r["below"]), pct(r["from"]),
                         pct(r["signed"]), f"{r['same']}/{r['picks']}" if r["picks"] else "-"]
                if args.holdout:
                    hb, hf = r["held"] or (None, None)
                    cells += [pct(hb), pct(hf)]
                    if hb is not None:
                        held_below.append(hb)
                    if hf is not None:
                        held_from.append(hf)
                print(("| " + " | ".join(cells) + " |") if args.markdown else " " + sep.join(f"{c:>14}" for c in cells))
    print()
    print(f"setups judged: {judged} (setup x collective); median over them of the median |error|: "
          f"{pct(statistics.median(per_setup_below)) if per_setup_below else '-'} below 64 KiB, "
          f"{pct(statistics.median(per_setup_from)) if per_setup_from else '-'} from 64 KiB; "
          f"within 10% in both bands: {within10} of {judged}; NCCL's logged pick named by the model: {same} of {picks} sizes")
    if args.holdout:
        print(f"fitted on every other size (commsim calibrate, no probe), the sizes between: median over setups "
              f"of the median |error|: {pct(statistics.median(held_below)) if held_below else '-'} below 64 KiB, "
              f"{pct(statistics.median(held_from)) if held_from else '-'} from 64 KiB")
    for s in skipped:
        print(f"not judged: {s}")


if __name__ == "__main__":
    main()
