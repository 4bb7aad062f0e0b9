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
