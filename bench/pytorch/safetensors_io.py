"""A pure-Python safetensors writer and reader (json + struct + numpy), for Debian's
Python, which has no `safetensors` package. Same layout as
formats/testdata/make_safetensors_fixture.py (the reference implementation's): 8-byte
little-endian header length, compact JSON header (`__metadata__` first) padded with
spaces to 8 bytes, tensors sorted by dtype (largest first) then name, stored contiguously.
"""

import json
import struct

import numpy as np
import torch

# The reference implementation's Dtype enum, in declaration order.
DTYPE_ORDER = ["BOOL", "U8", "I8", "F8_E5M2", "F8_E4M3", "I16", "U16", "F16", "BF16",
               "I32", "U32", "F32", "F64", "I64", "U64"]
TORCH_TO_ST = {torch.float32: "F32", torch.float64: "F64", torch.float16: "F16",
               torch.int32: "I32", torch.int64: "I64", torch.uint8: "U8", torch.bool: "BOOL",
               torch.int8: "I8", torch.int16: "I16"}
ST_TO_NUMPY = {"F32": "<f4", "F64": "<f8", "F16": "<f2", "I32": "<i4", "I64": "<i8",
               "U8": "|u1", "BOOL": "|b1", "I8": "|i1", "I16": "<i2"}


def save(path, tensors, metadata=None):
    """Writes {name: torch.Tensor} to `path`."""
    entries = []
    for name, t in tensors.items():
        if t.dtype not in TORCH_TO_ST:
            raise ValueError(f"{name}: dtype {t.dtype} not supported")
        entries.append((name, TORCH_TO_ST[t.dtype], t.detach().cpu().contiguous().numpy()))
    entries.sort(key=lambda e: (-DTYPE_ORDER.index(e[1]), e[0]))
    header = {}
    if metadata:
        header["__metadata__"] = metadata
    offset = 0
    chunks = []
    for name, dtype, array in entries:
        data = np.ascontiguousarray(array.astype(ST_TO_NUMPY[dtype], copy=False)).tobytes()
        header[name] = {"dtype": dtype, "shape": list(array.shape),
                        "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        chunks.append(data)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for c in chunks:
            f.write(c)


def _read_header(f, path):
    raw = f.read(8)
    if len(raw) < 8:
        raise ValueError(f"{path}: not a safetensors file (too short)")
    (n,) = struct.unpack("<Q", raw)
    text = f.read(n)
    if len(text) != n:
        raise ValueError(f"{path}: header runs past the end of the file")
    header = json.loads(text.decode("utf-8"))
    metadata = header.pop("__metadata__", {}) or {}
    return header, metadata, 8 + n


def iterate(path):
    """Yields (name, torch.Tensor) for every tensor of `path`, reading one tensor at a
    time (so loading adds at most one tensor to the process's memory at once)."""
    with open(path, "rb") as f:
        header, _, base = _read_header(f, path)
        for name, info in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0]):
            dtype, shape = info["dtype"], info["shape"]
            begin, stop = info["data_offsets"]
            if dtype not in ST_TO_NUMPY:
                raise ValueError(f"{path}: {name}: dtype {dtype} not supported")
            np_dtype = np.dtype(ST_TO_NUMPY[dtype])
            count = int(np.prod(shape, dtype=np.int64))
            if stop - begin != count * np_dtype.itemsize:
                raise ValueError(f"{path}: {name}: {stop - begin} bytes for shape {shape} {dtype}")
            buf = bytearray(stop - begin)
            f.seek(base + begin)
            if f.readinto(buf) != len(buf):
                raise ValueError(f"{path}: {name}: data runs past the end of the file")
            array = np.frombuffer(buf, dtype=np_dtype, count=count).reshape(shape)
            yield name, torch.from_numpy(array)


def load(path):
    """Reads `path` into ({name: torch.Tensor}, metadata)."""
    with open(path, "rb") as f:
        _, metadata, _ = _read_header(f, path)
    return dict(iterate(path)), metadata
