#!/usr/bin/env python3
"""Fuzzes the commsim binary with a fixed seed: topology YAML files, command-line options and HDF5
files (results files corrupted at random). Every case runs the binary once; a case fails when the
binary dies of a signal (a crash), runs past --case-timeout (a hang), or accepts a value outside
its stated range (exit 0 with a size beyond 8 PiB, a time that is not finite and positive, ...).

    fuzz.py --commsim BIN --kind topology|options|hdf5 --cases N [--seed S] [--workdir DIR]

Prints one line per failed case (with the command to reproduce it) and a summary; exits 1 when
any case failed. Standard library only, so that CI runs it without the analysis environment.
"""
import argparse
import concurrent.futures
import csv
import io
import math
import os
import random
import shutil
import signal
import subprocess
import sys

# Numbers a mutation puts where a number was: overflow, underflow, signs, not-a-number, too many
# digits, other bases.
EXTREMES = ["1e300", "5e-324", "-1", "0", "-0", "nan", "inf", "-inf", "1e19", "99999999999999999999",
            "1e-300", "4.6e9", "0x10", "1e303", "18446744073709551616", "2147483648", "1.5", ""]
UNITS = ["", "B", "KiB", "GiB", "TiB", "PiB", "EiB", "B/s", "TB/s", "Gb/s", "s", "us", "ns", "ms", "%", "x"]
MAX_BYTES = 2**53  # src/model/units.h kMaxBytes


class Outcome:
    def __init__(self, ok, why="", accepted=False):
        self.ok, self.why, self.accepted = ok, why, accepted


def run(cmd, timeout_s, cwd):
    """(returncode, stdout, stderr); returncode None on a timeout (the process group is killed)."""
    p = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         errors="replace", start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout_s)
        return p.returncode, out, err
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        return None, out, err


def judge(rc, err):
    """The verdict common to every kind: no signal, no hang, an error message on failure."""
    if rc is None:
        return Outcome(False, "hang (killed after the case timeout)")
    if rc < 0 or rc >= 128 or "Caught signal" in err:
        return Outcome(False, "crash (exit %s): %s" % (rc, err.strip().splitlines()[-1:] if err.strip() else ""))
    if rc != 0 and "error" not in err:
        return Outcome(False, "failed (exit %d) without an error message" % rc)
    return Outcome(True, accepted=rc == 0)


def check_predict_csv(text):
    """Every predicted time finite and positive, every size within range: '' when so."""
    rows = list(csv.DictReader(io.StringIO(text)))
    for r in rows:
        for key, value in r.items():
            if key is None or value in (None, "", "N/A", "-"):
                continue
            if key.endswith("_us") and key.startswith("predicted"):
                x = float(value)
                if not (math.isfinite(x) and x > 0):
                    return "accepted a prediction of %s us (%s)" % (value, key)
            if key == "bytes" and int(value) > MAX_BYTES:
                return "accepted a size of %s bytes" % value
    return ""


def mutate_yaml(rng, text):
    lines = text.splitlines()
    numeric = [i for i, l in enumerate(lines) if ":" in l and any(c.isdigit() for c in l.split(":", 1)[1])]
    how = rng.choice(["number", "number", "number", "unit", "delete", "duplicate", "truncate", "byte", "indent"])
    if how == "number" and numeric:
        i = rng.choice(numeric)
        key, value = lines[i].split(":", 1)
        comment = value.find("#")
        body = value if comment < 0 else value[:comment]
        words = body.split()
        if words:
            j = rng.randrange(len(words))
            digits = "".join(c for c in words[j] if c.isdigit() or c in ".-+e")
            words[j] = words[j].replace(digits, rng.choice(EXTREMES), 1) if digits else rng.choice(EXTREMES)
        lines[i] = key + ": " + " ".join(words)
    elif how == "unit" and numeric:
        i = rng.choice(numeric)
        lines[i] = lines[i].split("#")[0].rstrip() + rng.choice(UNITS)
    elif how == "delete" and lines:
        del lines[rng.randrange(len(lines))]
    elif how == "duplicate" and lines:
        i = rng.randrange(len(lines))
        lines.insert(i, lines[i])
    elif how == "indent" and lines:
        i = rng.randrange(len(lines))
        lines[i] = rng.choice(["  ", "    ", "\t", ""]) + lines[i].lstrip()
    out = "\n".join(lines) + "\n"
    if how == "truncate":
        out = out[: rng.randrange(len(out) + 1)]
    elif how == "byte" and out:
        i = rng.randrange(len(out))
        out = out[:i] + chr(rng.choice([0, 9, 10, 34, 39, 58, 91, 123, 255, 0x2028])) + out[i + 1:]
    return out


def topology_case(rng, args, work, presets):
    base = rng.choice(presets)
    path = os.path.join(work, "t.yaml")
    with open(path, "w", encoding="utf-8", errors="replace") as f:
        f.write(mutate_yaml(rng, open(base, encoding="utf-8").read()))
    cmd = [args.commsim, "predict", "--topology", path, "--sizes", "8B,1MiB", "--nodes", "1,2", "--format", "csv"]
    rc, out, err = run(cmd, args.case_timeout, work)
    verdict = judge(rc, err)
    if verdict.ok and rc == 0:
        bad = check_predict_csv(out)
        if bad:
            verdict = Outcome(False, bad)
    return cmd, verdict


def size_token(rng):
    return rng.choice(EXTREMES) + rng.choice(["", "B", "KiB", "GiB", "PiB", "EiB", "KB"])


def options_case(rng, args, work, presets):
    """Random values for the numeric options; a value out of range must be refused."""
    kind = rng.choice(["predict", "predict", "predict", "plan", "run"])
    if kind == "predict":
        sizes = rng.choice([size_token(rng), size_token(rng) + ":" + size_token(rng), "1KiB:" + size_token(rng)])
        nodes = rng.choice(["1", "2", rng.choice(EXTREMES), "1:" + rng.choice(EXTREMES), "0:4"])
        cmd = [args.commsim, "predict", "--topology", "local-cpu", "--sizes", sizes, "--nodes", nodes, "--format", "csv"]
        if rng.random() < 0.3:
            cmd += ["--channels", rng.choice(EXTREMES)]
        if rng.random() < 0.3:
            cmd += ["--gpus-per-node", rng.choice(EXTREMES)]
    elif kind == "plan":
        cmd = [args.commsim, "plan", "--topology", "dgx-h100", "--model", "llama3-8b",
               "--nodes", rng.choice(EXTREMES + ["1", "4", "1048577", "1000000000"]),
               "--global-batch", rng.choice(EXTREMES + ["64"]), "--seq", rng.choice(EXTREMES + ["4096"])]
    else:
        cmd = [args.commsim, "run", "--sizes", "8B", "--iters", "1", "--warmup", "0",
               "--timeout", rng.choice(["nan", "inf", "-1", "4.6e9", "1e300", "-0.5", "1e7"])]
    rc, out, err = run(cmd, args.case_timeout, work)
    verdict = judge(rc, err)
    if verdict.ok and rc == 0:
        if kind == "run":
            verdict = Outcome(False, "accepted a --timeout outside 0 to 1e6 s")
        elif kind == "predict":
            bad = check_predict_csv(out)
            if bad:
                verdict = Outcome(False, bad)
        elif kind == "plan" and ("-" + "GPUs" in out or " -" in out.split("GPUs")[0][-14:]):
            verdict = Outcome(False, "accepted a negative GPU count")
    return cmd, verdict


def corrupt(rng, data):
    data = bytearray(data)
    how = rng.choice(["flip", "flip", "zero", "huge", "truncate", "huge"])
    if how == "flip":
        for _ in range(rng.randint(1, 16)):
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
    elif how == "zero":
        at = rng.randrange(len(data))
        data[at:at + 8192] = bytes(len(data[at:at + 8192]))
    elif how == "huge":
        at = rng.randrange(len(data) - 8)
        data[at:at + 8] = rng.choice([b"\xff\xff\xff\xff\xff\xff\xff\x7f", b"\xff" * 8, b"\x00\x00\x00\x80" * 2])
    else:
        data = data[: rng.randrange(len(data))]
    return bytes(data)


def hdf5_case(rng, args, work, bases):
    name = rng.choice(sorted(bases))
    path = os.path.join(work, "c.h5")
    with open(path, "wb") as f:
        f.write(corrupt(rng, bases[name]))
    other = os.path.join(work, "base-" + name)
    merged = os.path.join(work, "m.h5")
    for leftover in (merged, merged + ".partial", merged + ".lock"):
        if os.path.exists(leftover):
            os.remove(leftover)
    cmd = rng.choice([[args.commsim, "report", path],
                      [args.commsim, "report", path, "--format", "csv"],
                      [args.commsim, "merge", path, other, "--out", merged]])
    rc, _, err = run(cmd, args.case_timeout, work)
    return cmd, judge(rc, err)


def make_bases(args, work):
    """Valid files to corrupt: predictions with several runs of points."""
    bases = {}
    for name, extra in [("predict.h5", ["--sizes", "8B:1MiB", "--nodes", "1,2"]),
                        ("nccl.h5", ["--topology", "dgx-h100", "--sizes", "1KiB:64KiB", "--nodes", "1,2,4"])]:
        path = os.path.join(work, "base-" + name)
        rc, _, err = run([args.commsim, "predict", "--out", path, "--format", "csv"] + extra, 120, work)
        if rc != 0:
            sys.exit("fuzz.py: cannot make %s: %s" % (name, err))
        bases[name] = open(path, "rb").read()
    return bases


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--commsim", required=True, help="the commsim binary")
    ap.add_argument("--kind", required=True, choices=["topology", "options", "hdf5"])
    ap.add_argument("--cases", type=int, default=1000, help="number of cases (default 1000)")
    ap.add_argument("--seed", type=int, default=50, help="random seed (default 50): the same cases every time")
    ap.add_argument("--workdir", default="fuzz-work", help="scratch folder (emptied first)")
    ap.add_argument("--case-timeout", type=float, default=60,
                    help="seconds before a case counts as a hang (default 60: a loaded CI machine)")
    ap.add_argument("--jobs", type=int, default=2, help="cases run at once")
    ap.add_argument("--configs", default=os.environ.get("COMMSIM_CONFIG_DIR", "configs"),
                    help="the configs folder (its topologies/*.yaml are the seeds)")
    args = ap.parse_args()
    args.commsim = os.path.abspath(args.commsim)
    args.workdir = os.path.abspath(args.workdir)  # cases run the binary inside it
    shutil.rmtree(args.workdir, ignore_errors=True)
    os.makedirs(args.workdir)
    topo_dir = os.path.join(args.configs, "topologies")
    presets = sorted(os.path.join(topo_dir, f) for f in os.listdir(topo_dir) if f.endswith(".yaml"))
    seeds = make_bases(args, args.workdir) if args.kind == "hdf5" else presets
    case = {"topology": topology_case, "options": options_case, "hdf5": hdf5_case}[args.kind]

    def one(i):
        rng = random.Random(args.seed * 1000003 + i)
        # A folder of its own: a slow case (a read the guard stops after 10 s) must not have its
        # files rewritten or its lock removed by a later case running beside it.
        work = os.path.join(args.workdir, str(i))
        os.makedirs(work, exist_ok=True)
        if args.kind == "hdf5":
            for name, data in seeds.items():
                target = os.path.join(work, "base-" + name)
                if not os.path.exists(target):
                    with open(target, "wb") as f:
                        f.write(data)
        cmd, verdict = case(rng, args, work, seeds)
        if verdict.ok:
            shutil.rmtree(work, ignore_errors=True)  # a failed case's files stay to reproduce it
        return i, cmd, verdict

    failed = accepted = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        for i, cmd, verdict in pool.map(one, range(args.cases)):
            accepted += verdict.accepted
            if not verdict.ok:
                failed += 1
                print("case %d: %s\n  %s" % (i, verdict.why, " ".join(cmd)), flush=True)
    print("fuzz %s: %d cases, seed %d: %d accepted, %d refused with a message, %d failed (crash, hang or a "
          "value out of range accepted)" % (args.kind, args.cases, args.seed, accepted, args.cases - accepted - failed,
                                            failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
