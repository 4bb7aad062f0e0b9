"""A `commsim predict --out` file read with plain h5py and pandas, as HDF5_SCHEMA.md describes."""
import os
import subprocess
import sys
import tempfile

import h5py
import pandas as pd

commsim = sys.argv[1]
with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "pred.h5")
    subprocess.run([commsim, "predict", "--topology", "dgx-h100", "--nodes", "1,2", "--collectives", "all",
                    "--sizes", "1KiB,1MiB", "--format", "csv", "--out", path],
                   check=True, stdout=subprocess.DEVNULL)
    with h5py.File(path, "r") as f:
        assert int(f.attrs["schema_version"]) == 1, f.attrs["schema_version"]
        assert "predict" in f.attrs["command_line"]
        run = f["runs"]["0000"]
        assert run.attrs["status"] == "complete", run.attrs["status"]
        assert run.attrs["backend"] == "model"
        assert len(run["hostnames"].asstr()[:]) == 1
        assert run.attrs["topology_text"].strip(), "topology text stored"
        table = f["points"][:]
        samples = f["samples"][:]
    df = pd.DataFrame({name: table[name] for name in table.dtype.names})
    for col in df.columns:
        if df[col].dtype.kind in "SO":
            df[col] = df[col].str.decode("utf-8")
    assert len(df) > 0
    assert set(df["collective"]) == {"allreduce", "allgather", "reducescatter", "broadcast", "reduce",
                                     "sendrecv", "alltoall"}, set(df["collective"])
    assert (df["backend"] == "model").all()
    assert df["measured_median_us"].isna().all()
    assert (df["predicted_us"] > 0).all()
    assert (df["samples_count"] == 0).all() and len(samples) == 0
    print(f"read {len(df)} points with h5py {h5py.__version__}, pandas {pd.__version__}")
