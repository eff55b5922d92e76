#!/usr/bin/env python3
"""Writes a smaller Fashion-MNIST (the first TRAIN training and TEST test examples, 4096
and 1000 unless given, as the four idx .gz files the driver's --data=DIR reads) for the
device checks, so that what is carried to the GPU machine stays small (the full set is
30 MB; the device tool carries 64 MiB with the tracked tree):

    python3 tests/cuda/nccl_check_data.py /usr/share/datasets/fashion-mnist .gpu/fashion-mnist-small
    python3 tests/cuda/nccl_check_data.py /usr/share/datasets/fashion-mnist .gpu/fashion-mnist-20k 20000 10000
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
    if len(sys.argv) not in (3, 4, 5):
        sys.exit("usage: nccl_check_data.py SRC DST [TRAIN [TEST]]")
    src, dst = sys.argv[1], sys.argv[2]
    counts = dict(COUNTS)
    for split, arg in zip(("train", "t10k"), sys.argv[3:]):
        counts[split] = int(arg)
    os.makedirs(dst, exist_ok=True)
    for split, count in counts.items():
        for kind in ("images-idx3", "labels-idx1"):
            name = "%s-%s-ubyte.gz" % (split, kind)
            truncate(os.path.join(src, name), os.path.join(dst, name), count)


if __name__ == "__main__":
    main()
