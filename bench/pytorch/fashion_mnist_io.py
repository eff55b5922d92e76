"""Fashion-MNIST's IDX files for the PyTorch peers (mlp_epoch.py, cnn_epoch.py)."""
import gzip

import numpy as np

DATA = "/usr/share/datasets/fashion-mnist"


def read_idx(path):
    """The array in a (gzip-compressed) IDX file."""
    with gzip.open(path, "rb") as f:
        data = f.read()
    rank = data[3]
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(rank)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * rank).reshape(dims)
