"""cuda_objects: device code compiled by the CUDA toolkit's nvcc into a cc_library.

Bazel 4.2.3 has no CUDA rules, so each `.cu` file goes through a genrule that runs
/usr/local/cuda/bin/nvcc (preinstalled on every machine, GPU or not) and the objects
land in a cc_library like any precompiled object. The code is built for sm_90 (H100,
H200) with compute_90 PTX beside it, which the driver compiles for newer chips.
"""

load("@rules_cc//cc:defs.bzl", "cc_library")

_NVCC = "/usr/local/cuda/bin/nvcc"

_FLAGS = " ".join([
    "-std=c++20",
    "-O3",
    "--expt-relaxed-constexpr",  # constexpr helpers (runtime/philox.h) on the device
    "-Xcompiler -fPIC",
    "-ccbin /usr/bin/gcc",
    "-gencode arch=compute_90,code=sm_90",
    "-gencode arch=compute_90,code=compute_90",
    "-I.",
])

def cuda_objects(name, srcs, hdrs = [], deps = [], **kwargs):
    """A cc_library of the objects nvcc makes from `srcs` (.cu files).

    `hdrs` are the headers the .cu files include (tree-relative, like the rest of the
    tree: #include "runtime/philox.h"); those of other packages are labels ("//runtime:
    philox.h", exported there) and are only given to nvcc. `deps` are the cc_library deps
    of the host side.
    """
    objs = []
    for src in srcs:
        obj = src.replace(".cu", ".cu.o")
        native.genrule(
            name = name + "_" + src.replace("/", "_").replace(".", "_"),
            srcs = [src] + hdrs,
            outs = [obj],
            cmd = _NVCC + " " + _FLAGS + " -c $(location " + src + ") -o $@",
            message = "nvcc " + src,
        )
        objs.append(obj)
    cc_library(
        name = name,
        srcs = objs,
        hdrs = [h for h in hdrs if not h.startswith("//")],
        deps = deps + ["//third_party:cudart"],
        alwayslink = True,
        **kwargs
    )
