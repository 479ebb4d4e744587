"""Packs a safetensors file small enough for the GPU machine's 64 MiB transfer, and unpacks it there.

pack:   every floating tensor rounded to float16 (the largest change is printed), the high and low
        bytes of all of them stored apart (the high bytes, sign and exponent, compress well), xz.
unpack: the same tensors back as float32 in a plain safetensors file.

Only numpy and safetensors are needed (both on the GPU machine's image and in the venv here).
Usage: python3 f16pack.py pack IN.safetensors OUT.f16.xz | unpack IN.f16.xz OUT.safetensors
"""

import json
import lzma
import os
import struct
import sys

import numpy as np
from safetensors.numpy import load_file, save_file


def pack(src, dst):
    tensors = load_file(src)
    names = sorted(tensors)
    meta, halves, others = [], [], []
    worst = 0.0
    for name in names:
        t = tensors[name]
        if t.dtype.kind == "f":
            h = t.astype(np.float16)
            worst = max(worst, float(np.max(np.abs(h.astype(np.float32) - t.astype(np.float32)), initial=0)))
            meta.append({"name": name, "shape": list(t.shape), "dtype": "f16"})
            halves.append(h.reshape(-1))
        else:
            meta.append({"name": name, "shape": list(t.shape), "dtype": t.dtype.str})
            others.append(np.ascontiguousarray(t).tobytes())
    flat = np.concatenate(halves).view(np.uint8).reshape(-1, 2) if halves else np.zeros((0, 2), np.uint8)
    head = json.dumps(meta).encode()
    body = struct.pack("<Q", len(head)) + head + flat[:, 1].tobytes() + flat[:, 0].tobytes() + b"".join(others)
    tmp = dst + ".tmp"
    with open(tmp, "wb") as f:
        f.write(lzma.compress(body, preset=6))
    os.replace(tmp, dst)
    print(f"{src}: {len(names)} tensors -> {dst} ({os.path.getsize(dst) / 2**20:.1f} MiB); largest change {worst:.2e}")


def unpack(src, dst):
    with open(src, "rb") as f:
        body = lzma.decompress(f.read())
    (n,) = struct.unpack("<Q", body[:8])
    meta = json.loads(body[8 : 8 + n])
    pos = 8 + n
    count = sum(int(np.prod(m["shape"])) for m in meta if m["dtype"] == "f16")
    hi = np.frombuffer(body, np.uint8, count, pos)
    lo = np.frombuffer(body, np.uint8, count, pos + count)
    pos += 2 * count
    flat = np.empty((count, 2), np.uint8)
    flat[:, 0], flat[:, 1] = lo, hi
    flat = flat.reshape(-1).view(np.float16)
    out, at = {}, 0
    for m in meta:
        size = int(np.prod(m["shape"]))
        if m["dtype"] == "f16":
            out[m["name"]] = flat[at : at + size].astype(np.float32).reshape(m["shape"])
            at += size
        else:
            dt = np.dtype(m["dtype"])
            out[m["name"]] = np.frombuffer(body, dt, size, pos).reshape(m["shape"]).copy()
            pos += size * dt.itemsize
    tmp = dst + ".tmp"
    save_file(out, tmp)
    os.replace(tmp, dst)
    print(f"{src}: {len(meta)} tensors -> {dst}")


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] not in ("pack", "unpack"):
        sys.exit(__doc__)
    (pack if sys.argv[1] == "pack" else unpack)(sys.argv[2], sys.argv[3])
