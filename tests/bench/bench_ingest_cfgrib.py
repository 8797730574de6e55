"""The peer of `wxcast ingest` in tests/bench/bench_ingest.sh, in two modes so that the conversion
can be timed end to end as its own process (interpreter start and imports included):
  convert IN.grib OUT.raw   xarray + cfgrib open the GRIB file and write the same float32 array
                            [time, channel(t2m, msl), lat, lon] (fsynced); prints one JSON line
                            with the seconds spent after the imports (in-process wall and CPU);
  check OUT.raw ARCHIVE_DIR compares that array with the wxcast archive's records (JSON line)."""
import json
import os
import sys
import time

t0, c0 = time.perf_counter(), time.process_time()
import numpy as np  # noqa: E402

if sys.argv[1] == "convert":
    import xarray as xr
    src, out = sys.argv[2:4]
    t1, c1 = time.perf_counter(), time.process_time()
    ds = xr.open_dataset(src, engine="cfgrib", backend_kwargs={"indexpath": ""})
    arr = np.stack([ds[v].values.astype(np.float32) for v in ("t2m", "msl")], axis=1)
    with open(out, "wb") as f:
        arr.tofile(f)
        f.flush()
        os.fsync(f.fileno())
    t2, c2 = time.perf_counter(), time.process_time()
    print(json.dumps({"what": "xarray_cfgrib", "mb": arr.nbytes / 1e6, "s": round(t2 - t1, 3),
                      "cpu_s": round(c2 - c1, 3), "import_s": round(t1 - t0, 3),
                      "import_cpu_s": round(c1 - c0, 3)}))
else:
    out, archive = sys.argv[2:4]
    # The archive's records: shard-00000.wxr, records at data_offset + i * stride (docs/archive-format.md).
    m = json.load(open(os.path.join(archive, "manifest.json")))
    n, stride, rb = m["time"]["count"], m["shards"]["record_stride"], m["shards"]["record_bytes"]
    arr = np.fromfile(out, dtype="<f4").reshape(n, -1)
    data_offset = (72 + 12 * n + 4095) // 4096 * 4096
    raw = np.memmap(os.path.join(archive, "shard-00000.wxr"), dtype=np.uint8, mode="r")
    same = all(np.array_equal(np.frombuffer(raw[data_offset + i * stride: data_offset + i * stride + rb],
                                            dtype="<f4"), arr[i]) for i in range(n))
    print(json.dumps({"identical_to_archive": bool(same)}))
