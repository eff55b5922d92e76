#!/usr/bin/env python3
"""Writes the IDX seed corpus of idx_reader_fuzzer (corpus/idx_reader_fuzzer/): one
small file per element type IDX maps to, a rank-0 and a rank-3 file, and a gzip one."""
import gzip
import os
import struct

out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "idx_reader_fuzzer")
os.makedirs(out, exist_ok=True)


def idx(type_byte, dims, payload):
    return bytes([0, 0, type_byte, len(dims)]) + b"".join(struct.pack(">I", d) for d in dims) + payload


files = {
    "u8_images.idx": idx(0x08, [2, 3, 3], bytes(range(18))),
    "u8_labels.idx": idx(0x08, [4], bytes([0, 9, 3, 7])),
    "i32.idx": idx(0x0C, [3], struct.pack(">3i", -1, 0, 70000)),
    "f32.idx": idx(0x0D, [2, 2], struct.pack(">4f", 1.5, -2.0, 0.0, 3.25)),
    "f64.idx": idx(0x0E, [2], struct.pack(">2d", 3.141592653589793, -1e300)),
    "scalar.idx": idx(0x08, [], bytes([42])),
}
for name, data in files.items():
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)
with open(os.path.join(out, "u8_images.idx.gz"), "wb") as f:
    f.write(gzip.compress(files["u8_images.idx"], mtime=0))
