"""analysis/refit.py on a stored folder of analysis/accuracy.sh (2 ranks on a 2-core machine): the
numbers it prints are those of `commsim report --format json` on the fits it kept, the totals add
up, and a folder without its runs is refused with a message naming the missing file.
"""

import json
import os
import re
import shutil
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ANALYSIS = os.path.dirname(HERE)
REPO = os.path.dirname(ANALYSIS)
FOLDER = os.path.join(REPO, "results", "ci-vm-2ranks")
sys.path.insert(0, HERE)

from test_report import find_binary  # noqa: E402


def refit(args, binary):
    env = dict(os.environ, COMMSIM_BIN=binary)
    return subprocess.run([sys.executable, os.path.join(ANALYSIS, "refit.py")] + args, capture_output=True,
                          text=True, env=env, timeout=600)


@pytest.fixture(scope="module")
def kept(tmp_path_factory):
    binary = find_binary()
    fits = tmp_path_factory.mktemp("fits")
    proc = refit([FOLDER, "--keep", str(fits), "--jobs", "2", "--min-rounds", "1"], binary)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return binary, fits, proc.stdout


def winners(binary, run, fit):
    out = subprocess.run([binary, "report", run, "--topology", fit, "--format", "json"], capture_output=True,
                         text=True, check=True).stdout
    return json.loads(out)["winners"]


def rows(stdout):
    """(judged on, fastest picked, cases, clear picked, clear, slower) of every round's line, in order."""
    pattern = re.compile(r"(in-sample|out-of-sample)\s+(\d+)/(\d+)\s+\S+\s+\S+\s+(\d+)/(\d+)\s+\S+\s+(\d+)")
    return [(m.group(1),) + tuple(int(g) for g in m.groups()[1:]) for m in map(pattern.search, stdout.splitlines())
            if m]


def test_rounds_match_commsim_report(kept):
    binary, fits, stdout = kept
    name = os.path.basename(FOLDER)
    got = rows(stdout)
    # Two rounds (fitted on run 1, on run 2), each judged in-sample then out-of-sample, then the totals.
    assert len(got) >= 4, stdout
    for i, fit_on in enumerate((1, 2)):
        fit = os.path.join(fits, name, f"fit{fit_on}.yaml")
        assert os.path.isfile(fit), f"--keep did not keep {fit}"
        for j, judged_on in enumerate((fit_on, 3 - fit_on)):
            w = winners(binary, os.path.join(FOLDER, f"run{judged_on}.h5"), fit)
            line = got[2 * i + j]
            assert line[0] == ("in-sample" if j == 0 else "out-of-sample")
            assert line[1:] == (w["agree"], w["cases"], w["clear_agree"], w["clear"], w["pick_slower"]), stdout


def test_totals_add_up(kept):
    _, _, stdout = kept
    got = rows(stdout)
    totals = stdout[stdout.index("\ntotals"):]
    total_rows = rows(totals)
    assert len(total_rows) == 2, totals  # one rank count: in-sample and out-of-sample
    for kind, total in zip(("in-sample", "out-of-sample"), total_rows):
        per_round = [r for r in got[:4] if r[0] == kind]
        assert total[1:] == tuple(sum(r[k] for r in per_round) for k in range(1, 6)), stdout


def test_clear_misses_listed(kept):
    _, _, stdout = kept
    m = re.search(r"Clear in-sample misses: (\d+) over 2 rounds", stdout)
    assert m, stdout
    in_sample_slower = sum(r[5] for r in rows(stdout)[:4] if r[0] == "in-sample")
    assert int(m.group(1)) == in_sample_slower
    listed = re.findall(r"^\s+(\d+) rounds\s+2 ranks", stdout, re.M)
    # --min-rounds 1: every clear miss is listed once per case, its rounds adding up to the count.
    assert sum(int(n) for n in listed) == in_sample_slower, stdout


def test_folder_without_runs_is_refused(tmp_path):
    binary = find_binary()
    folder = tmp_path / "half"
    folder.mkdir()
    for f in ("portrait.h5", "run1.h5"):
        shutil.copy(os.path.join(FOLDER, f), folder / f)
    proc = refit([str(folder)], binary)
    assert proc.returncode != 0
    assert "run2.h5" in proc.stderr and str(folder) in proc.stderr, proc.stderr
