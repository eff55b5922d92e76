"""cuda_cases_source, cuda_cases and step_bench_binary: run tests/cuda's generator at build
time and time what it generates (see BUILD)."""

def _cuda_cases_source_impl(ctx):
    ctx.actions.run(
        executable = ctx.attr.generator[DefaultInfo].files_to_run,
        arguments = ctx.attr.flags + [ctx.outputs.out.path],
        outputs = [ctx.outputs.out],
        mnemonic = "WeftCudaCases",
        progress_message = "Lowering the CUDA test cases %s" % ctx.label,
    )

# Like tools/aot's _weft_generate, the generator is built for the target configuration
# (a genrule would build weft's compiler a second time, for the host) and run on the
# build machine; it emits PTX, which does not depend on the build machine.
cuda_cases_source = rule(
    implementation = _cuda_cases_source_impl,
    attrs = {
        "generator": attr.label(executable = True, cfg = "target", mandatory = True),
        "out": attr.output(mandatory = True),
        "flags": attr.string_list(),
    },
)

def cuda_cases(name, out, flags = []):
    """The cases gen_cases writes into `out` (with `flags`), as a cc_library `name`.

    The generated file is compiled once, however many binaries link it (cases_test,
    nccl_step_test and step_bench link :cases).
    """
    cuda_cases_source(
        name = name + "_source",
        out = out,
        flags = flags,
        generator = ":gen_cases",
    )
    native.cc_library(
        name = name,
        srcs = [out],
        deps = [
            ":case_list",
            "//runtime:program_tables",
        ],
    )

def step_bench_binary(name, cases):
    """step_bench.cc (compiled once, :step_bench_main) over one library of generated cases
    (`cases`, a cuda_cases target): a self-contained binary.

    Like cases_test, weft's libraries and libstdc++ are linked in and CUDA's own libraries
    come from the machine it runs on, so the binary is copied to a GPU machine as is.
    """
    native.cc_binary(
        name = name,
        linkopts = [
            "-static-libstdc++",
            "-static-libgcc",
        ],
        # The main first: the linker scans the cases' archive after it, for all_cases().
        deps = [
            "//tests/cuda:step_bench_main",
            cases,
        ],
    )

def cases_and_step_bench(cases, bench, flags):
    """cuda_cases `cases` (gen_cases with `flags`, into CASES.cc) and step_bench_binary
    `bench` over them."""
    cuda_cases(
        name = cases,
        out = cases + ".cc",
        flags = flags,
    )
    step_bench_binary(
        name = bench,
        cases = ":" + cases,
    )
