"""analysis/nccl_corpus.py --holdout on two setups of tests/data/nccl-tests (the 8x RTX 4090 logs):
every row gets held-out errors (NCCL's model fitted by `commsim calibrate` on every other size, judged
on the sizes between), the totals line says so, and the fit is closer than the specifications alone.
"""

import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ANALYSIS = os.path.dirname(HERE)
sys.path.insert(0, HERE)

from test_report import find_binary  # noqa: E402


def test_holdout_on_two_setups():
    env = dict(os.environ, COMMSIM_BIN=find_binary())
    r = subprocess.run([sys.executable, os.path.join(ANALYSIS, "nccl_corpus.py"), "--holdout", "--only", "rtx4090x8"],
                       capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stderr
    rows = [line.split() for line in r.stdout.splitlines() if line.startswith(" rtx4090x8_pcie")]
    assert len(rows) == 2, r.stdout
    for row in rows:
        spec_below, held_below = float(row[-6].rstrip("%")), float(row[-2].rstrip("%"))
        assert held_below < spec_below, row
    m = re.search(r"the sizes between: median over setups of the median \|error\|: ([\d.]+)% below 64 KiB, "
                  r"([\d.]+)% from 64 KiB", r.stdout)
    assert m, r.stdout
    assert float(m.group(1)) < 10 and float(m.group(2)) < 10


def test_pick_named_from_the_per_call_lines(tmp_path):
    """A setup whose log prints NCCL's per-call `Algo X proto Y` lines (tests/collectives/data/
    nccl-2.28.9-tuning-table.log, one 8-GPU H100 node): the "NCCL's pick named" column compares each
    size's logged pick with NCCL's model's (Ring/LL to 512 KiB, NVLS/Simple from 4 MiB: 7 of 7), and
    a pick the model does not make (Tree/LL at 1 KiB) is counted as missed."""
    fixture = os.path.join(os.path.dirname(ANALYSIS), "tests", "collectives", "data", "nccl-2.28.9-tuning-table.log")
    env = dict(os.environ, COMMSIM_BIN=find_binary())
    with open(fixture) as f:
        log = f.read()
    for name, text in (("nvidia_dgxc_h100_1n_a", log),
                       ("nvidia_dgxc_h100_1n_b", log.replace("AllReduce: 1024 Bytes -> Algo RING", "AllReduce: 1024 Bytes -> Algo TREE"))):
        (tmp_path / "raw").mkdir(exist_ok=True)
        (tmp_path / "raw" / (name + ".txt")).write_text(text)
        (tmp_path / (name + ".csv")).write_text("# source: tests/collectives/data/nccl-2.28.9-tuning-table.log\n"
                                                "collective,bytes\nall_reduce,1024\n")
    r = subprocess.run([sys.executable, os.path.join(ANALYSIS, "nccl_corpus.py"), "--data", str(tmp_path)],
                       capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stderr
    rows = {line.split()[0]: line.split()[-1] for line in r.stdout.splitlines() if line.startswith(" nvidia_dgxc")}
    assert rows == {"nvidia_dgxc_h100_1n_a": "7/7", "nvidia_dgxc_h100_1n_b": "6/7"}, r.stdout
    assert "NCCL's logged pick named by the model: 13 of 14 sizes" in r.stdout
