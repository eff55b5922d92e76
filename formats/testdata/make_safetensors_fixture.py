#!/usr/bin/python3
"""The safetensors interop fixtures of formats/safetensors_test.cc.

Debian has no `safetensors` Python package, so this script holds a small pure-Python
writer and reader that follow the format and the layout choices of the reference
implementation (huggingface/safetensors, `safetensors.torch.save_file`):

  * 8-byte little-endian header length, then compact JSON (`json.dumps` with
    separators=(",", ":")), `__metadata__` first, padded with spaces to 8 bytes;
  * tensors sorted by dtype (the Rust `Dtype` enum order, largest first) then name, as
    the reference `serialize` does, and stored contiguously in that order.

Run from the repository root with Debian's Python (torch 1.13 and NumPy):

    /usr/bin/python3 formats/testdata/make_safetensors_fixture.py write
        writes formats/testdata/safetensors/python_written.safetensors, which the C++ test
        reads and checks value by value (the values are below, in `reference_tensors`)

    /usr/bin/python3 formats/testdata/make_safetensors_fixture.py verify
        reads formats/testdata/safetensors/weft_written.safetensors (a golden file the
        C++ test checks weft's writer reproduces byte for byte) into torch tensors and
        checks every value and the checksum; prints OK. This is how weft's output was
        checked against torch once; the C++ test itself needs no Python.
"""

import json
import os
import struct
import sys

import numpy as np

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "safetensors")

# The reference implementation's Dtype enum, in declaration order.
DTYPE_ORDER = ["BOOL", "U8", "I8", "F8_E5M2", "F8_E4M3", "I16", "U16", "F16", "BF16",
               "I32", "U32", "F32", "F64", "I64", "U64"]
NUMPY_DTYPES = {"F32": "<f4", "F64": "<f8", "F16": "<f2", "I32": "<i4", "I64": "<i8",
                "U8": "|u1", "BOOL": "|b1", "BF16": "<u2"}  # BF16 as its raw bits


def bf16_bits(values):
    """bfloat16 bits of float32 values that are exactly representable."""
    bits = np.asarray(values, dtype="<f4").view("<u4") >> 16
    return bits.astype("<u2")


def reference_tensors():
    """name -> (safetensors dtype, numpy array of the stored bits)."""
    return {
        "layer.weight": ("F32", (np.arange(6, dtype="<f4").reshape(2, 3) * 0.5 - 1.0)),
        "layer.bias": ("F32", np.array([1.5, -2.25], dtype="<f4")),
        "scale": ("F64", np.array(3.141592653589793, dtype="<f8")),  # a scalar: shape []
        "half": ("F16", np.array([1.0, -0.5, 65504.0], dtype="<f2")),
        "brain": ("BF16", bf16_bits([1.0, -2.0, 0.15625, 256.0]).reshape(2, 2)),
        "count": ("I32", np.array([-7, 0, 2147483647], dtype="<i4")),
        "step": ("I64", np.array([1 << 40], dtype="<i8")),
        "pixels": ("U8", np.array([[0, 128, 255]], dtype="|u1")),
        "mask": ("BOOL", np.array([True, False, True, True], dtype="|b1")),
        "empty": ("F32", np.zeros((0, 3), dtype="<f4")),
    }


def serialize(tensors, metadata):
    order = sorted(tensors.items(), key=lambda kv: (-DTYPE_ORDER.index(kv[1][0]), kv[0]))
    header = {}
    if metadata:
        header["__metadata__"] = metadata
    offset = 0
    chunks = []
    for name, (dtype, array) in order:
        data = np.ascontiguousarray(array).tobytes()
        header[name] = {"dtype": dtype, "shape": list(array.shape),
                        "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        chunks.append(data)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * ((8 - len(text) % 8) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(chunks)


def deserialize(blob):
    """Returns (metadata, {name: (dtype, shape, raw bytes)}), checking the layout."""
    (n,) = struct.unpack("<Q", blob[:8])
    assert 8 + n <= len(blob), "header runs past the end"
    header = json.loads(blob[8:8 + n].decode("utf-8"))
    metadata = header.pop("__metadata__", {})
    data = blob[8 + n:]
    out = {}
    end = 0
    for name, info in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"]):
        begin, stop = info["data_offsets"]
        assert begin == end, f"{name}: not contiguous"
        end = stop
        out[name] = (info["dtype"], info["shape"], data[begin:stop])
    assert end == len(data), "data section not covered"
    return metadata, out, data


def fnv1a64(data):
    h = 0xcbf29ce484222325
    for b in data:
        h ^= b
        h = (h * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


def to_torch(dtype, shape, raw):
    import torch
    torch_dtypes = {"F32": torch.float32, "F64": torch.float64, "F16": torch.float16,
                    "BF16": torch.bfloat16, "I32": torch.int32, "I64": torch.int64,
                    "U8": torch.uint8, "BOOL": torch.bool}
    if len(raw) == 0:
        return torch.zeros(shape, dtype=torch_dtypes[dtype])
    return torch.frombuffer(bytearray(raw), dtype=torch_dtypes[dtype]).reshape(shape)


def write():
    os.makedirs(HERE, exist_ok=True)
    blob = serialize(reference_tensors(), {"format": "pt", "source": "pure-python writer"})
    with open(os.path.join(HERE, "python_written.safetensors"), "wb") as f:
        f.write(blob)
    print(f"wrote python_written.safetensors ({len(blob)} bytes)")


def verify():
    import torch
    with open(os.path.join(HERE, "weft_written.safetensors"), "rb") as f:
        blob = f.read()
    metadata, entries, data = deserialize(blob)
    assert (8 + struct.unpack("<Q", blob[:8])[0]) % 8 == 0, "data not 8-byte aligned"
    assert metadata["checksum"] == fnv1a64(data), "checksum mismatch"
    assert metadata["format"] == "pt", metadata
    expected = reference_tensors()
    assert set(entries) == set(expected), (sorted(entries), sorted(expected))
    for name, (dtype, array) in expected.items():
        got_dtype, shape, raw = entries[name]
        assert got_dtype == dtype, (name, got_dtype, dtype)
        t = to_torch(dtype, shape, raw)
        if dtype == "BF16":
            want = torch.from_numpy(array.astype("<i2").copy()).view(torch.bfloat16)
        else:
            want = torch.from_numpy(array.astype(NUMPY_DTYPES[dtype]).copy())
        assert t.shape == want.shape, (name, t.shape, want.shape)
        assert torch.equal(t, want), (name, t, want)
        print(f"  {name}: {t.dtype} {list(t.shape)} ok")
    # Byte for byte what the reference layout gives for the same tensors and metadata.
    assert serialize(expected, metadata) == blob, "layout differs from the reference writer"
    print("OK: torch", torch.__version__, "reads weft_written.safetensors")


if __name__ == "__main__":
    {"write": write, "verify": verify}[sys.argv[1] if len(sys.argv) > 1 else "write"]()
