#!/usr/bin/env python3
"""Writes a small Fashion-MNIST (the first 4096 training and 1000 test examples, as the
four idx .gz files the driver's --data=DIR reads) for tests/cuda/nccl_check.sh, so that
what is carried to the GPU machine stays small (the full set is 30 MB).

    python3 tests/cuda/nccl_check_data.py /usr/share/datasets/fashion-mnist .gpu/fashion-mnist-small
"""
import gzip
import os
import struct
import sys

COUNTS = {"train": 4096, "t10k": 1000}


def truncate(src, dst, count):
    with gzip.open(src, "rb") as f:
        data = f.read()
    magic, total = struct.unpack(">II", data[:8])
    dims = (magic & 0xFF) - 1  # the dimensions after the count
    header = 8 + 4 * dims
    row = 1
    for i in range(dims):
        row *= struct.unpack(">I", data[8 + 4 * i:12 + 4 * i])[0]
    assert count <= total, (src, count, total)
    out = struct.pack(">II", magic, count) + data[8:header] + data[header:header + count * row]
    with gzip.open(dst, "wb") as f:
        f.write(out)


def main():
    src, dst = sys.argv[1], sys.argv[2]
    os.makedirs(dst, exist_ok=True)
    for split, count in COUNTS.items():
        for kind in ("images-idx3", "labels-idx1"):
            name = "%s-%s-ubyte.gz" % (split, kind)
            truncate(os.path.join(src, name), os.path.join(dst, name), count)


if __name__ == "__main__":
    main()
