"""cuda_objects: device code compiled by the CUDA toolkit's nvcc into a cc_library.

Bazel 4.2.3 has no CUDA rules, so each `.cu` file goes through a genrule that runs
/usr/local/cuda/bin/nvcc (preinstalled on every machine, GPU or not) and the objects
land in a cc_library like any precompiled object. The code is a fat binary: machine code
(SASS) for every architecture in CUDA_ARCHS, Turing (sm_75) to Blackwell (sm_120), plus
PTX of the newest, which the driver compiles for later chips. CUDA_ARCHS is the one list:
the flags below, and the header `cuda_archs.h` (cuda_archs_header) from which the
runtime's bind-time check (runtime/cuda/architecture.h) and the test that reads the
objects' fat binaries (runtime/cuda:fatbin_test) take it.
"""

load("@rules_cc//cc:defs.bzl", "cc_library")

_NVCC = "/usr/local/cuda/bin/nvcc"

# Compute capabilities as major*10 + minor: Turing, Ampere (A100; RTX 30), Ampere
# (consumer: sm_86), Ada (L4, RTX 40), Hopper (H100/H200), Blackwell (B200), Blackwell
# (consumer: RTX 50). A chip runs machine code of its own major version and a lower or
# equal minor one, or PTX of a lower or equal architecture.
CUDA_ARCHS = [75, 80, 86, 89, 90, 100, 120]

# The architecture whose PTX is embedded for chips newer than every entry above.
CUDA_PTX_ARCH = CUDA_ARCHS[-1]

_GENCODE = ["-gencode arch=compute_%d,code=sm_%d" % (a, a) for a in CUDA_ARCHS] + [
    "-gencode arch=compute_%d,code=compute_%d" % (CUDA_PTX_ARCH, CUDA_PTX_ARCH),
]

_FLAGS = " ".join([
    "-std=c++20",
    "-O3",
    "--expt-relaxed-constexpr",  # constexpr helpers (runtime/philox.h) on the device
    "-Xcompiler -fPIC",
    "-ccbin /usr/bin/gcc",
    "-I.",
] + _GENCODE)

def cuda_archs_header(name, out):
    """A genrule writing `out`, a C++ header with CUDA_ARCHS and CUDA_PTX_ARCH."""
    lines = [
        "#pragma once",
        "// Generated from CUDA_ARCHS in third_party/cuda.bzl: the architectures whose machine",
        "// code the CUDA objects carry (major*10 + minor), and the one whose PTX they carry.",
        "namespace weft::cuda {",
        "inline constexpr int kCudaArchs[] = {%s};" % ", ".join([str(a) for a in CUDA_ARCHS]),
        "inline constexpr int kCudaPtxArch = %d;" % CUDA_PTX_ARCH,
        "}  // namespace weft::cuda",
    ]
    native.genrule(
        name = name,
        outs = [out],
        cmd = "printf '%s\\n' " + " ".join(["'%s'" % l for l in lines]) + " > $@",
        message = "CUDA architecture list",
    )

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
