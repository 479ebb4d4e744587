#!/usr/bin/env python3
"""PyTorch side of `go run ./cmd/toolret bench matmul`: torch.mm throughput on n x n matrices per
dtype, 4 chained products per call like the Go side, best of 3 rounds of 0.5 s over 1 and all
threads.

    env -u OPENBLAS_CORETYPE /usr/bin/python3 scripts/bench/torch_matmul.py SPEC.json
    OPENBLAS_CORETYPE=SkylakeX /usr/bin/python3 scripts/bench/torch_matmul.py SPEC.json

SPEC.json: {"n": 1024, "dtypes": ["float32", "bfloat16"]}. Prints one JSON line:
{"gflops": {dtype: GFLOP/s}, "threads": {dtype: best thread count}, "blas_core": ..., "torch": ...}
"""
import json, os, sys
import torch

from benchlib import blas_core, mm_peak

spec = json.load(open(sys.argv[1]))
n = spec["n"]
torch.manual_seed(0)
gflops, threads = {}, {}
for name in spec["dtypes"]:
    dt = getattr(torch, name)
    for t in sorted({1, os.cpu_count()}):
        torch.set_num_threads(t)
        g = mm_peak(n, dt)
        if g > gflops.get(name, 0):
            gflops[name], threads[name] = g, t
print(json.dumps({"gflops": gflops, "threads": threads, "blas_core": blas_core(), "torch": torch.__version__}))
