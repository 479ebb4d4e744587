#!/usr/bin/env python3
"""PyTorch side of `go run ./cmd/bench matmul`: torch.mm throughput on n x n matrices per
dtype, 4 chained products per call like the Go side, best of 3 rounds of 0.5 s over 1 and all
threads.

    env -u OPENBLAS_CORETYPE /usr/bin/python3 scripts/bench/torch_matmul.py SPEC.json
    OPENBLAS_CORETYPE=SkylakeX /usr/bin/python3 scripts/bench/torch_matmul.py SPEC.json

SPEC.json: {"n": 1024, "dtypes": ["float32", "bfloat16"]}. Prints one JSON line:
{"gflops": {dtype: GFLOP/s}, "threads": {dtype: best thread count}, "blas_core": ..., "torch": ...}
"""
import json, os, sys, time
import torch

from blascore import blas_core

spec = json.load(open(sys.argv[1]))
n, chain = spec["n"], 4
torch.manual_seed(0)
gflops, threads = {}, {}
for name in spec["dtypes"]:
    dt = getattr(torch, name)
    a, b = torch.randn(n, n).to(dt), (torch.randn(n, n) / n).to(dt)
    for t in sorted({1, os.cpu_count()}):
        torch.set_num_threads(t)
        torch.mm(a, b)
        for _ in range(3):
            calls, t0 = 0, time.perf_counter()
            while calls == 0 or time.perf_counter() - t0 < 0.5:
                x = a
                for _ in range(chain):
                    x = torch.mm(x, b)
                calls += 1
            g = calls * chain * 2 * n ** 3 / (time.perf_counter() - t0) / 1e9
            if g > gflops.get(name, 0):
                gflops[name], threads[name] = g, t
print(json.dumps({"gflops": gflops, "threads": threads, "blas_core": blas_core(), "torch": torch.__version__}))
