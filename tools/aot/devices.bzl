"""The devices weft_library and weft_binary compile for: the build side of a device's
registration (runtime/README.md, "A new device").

One entry per backend name, the name a `backend = ...` attribute takes and under which
the device registers its codegen::Target (codegen/targets.cc) and its runtime Backend
(runtime/NAME/backend.cc). A .bzl cannot ask the C++ registries, so what the macros in
weft.bzl need of a device is written here, once:

    object            True when the generator writes NAME.o: the device's kernels are host
                      object code (its Target's aot_code is AotCode::object); False when
                      they travel as one module per Program inside the generated sources
                      (AotCode::module). Must agree with the Target: the generator refuses
                      a missing or extra --object, naming the backend.
    backend           the device's runtime registration (an alwayslink cc_library) that
                      the generated library links
    driver_main       the training driver's main() a weft_binary links
    data_parallel_driver_main
                      the one it links with data_parallel = True (the launch's world:
                      Open MPI or Gloo, //training/driver:main)
    carried_linkopts  link options of the binaries meant to be carried to a machine of
                      that device (NAME_runtime_test and weft_binary's NAME): [] when they
                      run where they are built
"""

WEFT_DEVICES = {
    "cpu": struct(
        object = True,
        backend = "//runtime/cpu:backend",
        driver_main = "//training/driver:main",
        data_parallel_driver_main = "//training/driver:main",
        carried_linkopts = [],
    ),
    # A GPU machine has CUDA's libraries but not necessarily this machine's libstdc++ or
    # Open MPI: its binaries carry their own libstdc++ and libgcc (as tests/cuda:cases_test
    # does) and train in one process; with data_parallel = True they link Open MPI and
    # Gloo (the launch's world, over which NCCL starts) and need them where they run.
    "cuda": struct(
        object = False,
        backend = "//runtime/cuda:backend",
        driver_main = "//training/driver:main_one_process",
        data_parallel_driver_main = "//training/driver:main",
        carried_linkopts = ["-static-libstdc++", "-static-libgcc"],
    ),
}

def _quoted_list(names):
    """'"a"', '"a" and "b"', '"a", "b" and "c"'."""
    quoted = ['"%s"' % n for n in names]
    if len(quoted) < 2:
        return "".join(quoted)
    return ", ".join(quoted[:-1]) + " and " + quoted[-1]

def weft_device(name, backend):
    """The WEFT_DEVICES entry of `backend`; fails for target `name`, listing the devices."""
    if backend not in WEFT_DEVICES:
        fail("%s: backend = \"%s\": weft_library compiles for %s" %
             (name, backend, _quoted_list(WEFT_DEVICES.keys())))
    return WEFT_DEVICES[backend]
