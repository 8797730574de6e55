"""The peer of `wxcast ingest` in tests/bench/bench_ingest.sh: xarray + cfgrib open the GRIB file
and write the same float32 array [time, channel(t2m, msl), lat, lon] (fsynced), then the array is
compared with the wxcast archive's records. Usage: python3 bench_ingest_cfgrib.py IN.grib OUT.raw
ARCHIVE_DIR. Prints one JSON line."""
import json
import os
import sys
import time

import numpy as np
import xarray as xr

src, out, archive = sys.argv[1:4]
t0, c0 = time.perf_counter(), time.process_time()
ds = xr.open_dataset(src, engine="cfgrib", backend_kwargs={"indexpath": ""})
arr = np.stack([ds[v].values.astype(np.float32) for v in ("t2m", "msl")], axis=1)
with open(out, "wb") as f:
    arr.tofile(f)
    f.flush()
    os.fsync(f.fileno())
sec, cpu = time.perf_counter() - t0, time.process_time() - c0
# The archive's records: shard-00000.wxr, records at data_offset + i * stride (docs/archive-format.md).
m = json.load(open(os.path.join(archive, "manifest.json")))
n, stride, rb = m["time"]["count"], m["shards"]["record_stride"], m["shards"]["record_bytes"]
data_offset = (72 + 12 * n + 4095) // 4096 * 4096
raw = np.memmap(os.path.join(archive, "shard-00000.wxr"), dtype=np.uint8, mode="r")
same = all(np.array_equal(np.frombuffer(raw[data_offset + i * stride: data_offset + i * stride + rb],
                                        dtype="<f4"), arr[i].ravel()) for i in range(n))
print(json.dumps({"what": "xarray_cfgrib", "mb": arr.nbytes / 1e6, "s": round(sec, 3),
                  "mb_s": round(arr.nbytes / 1e6 / sec, 1), "cpu_s": round(cpu, 3), "identical_to_archive": bool(same)}))
