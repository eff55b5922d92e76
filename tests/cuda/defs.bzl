"""cuda_cases_source: runs tests/cuda's generator at build time (see BUILD)."""

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

def step_bench_binary(name, cases):
    """step_bench.cc over one generated cases file (`cases`): a self-contained binary.

    Like cases_test, weft's libraries and libstdc++ are linked in and CUDA's own libraries
    come from the machine it runs on, so the binary is copied to a GPU machine as is.
    """
    native.cc_binary(
        name = name,
        srcs = [
            "case_inputs.h",
            "cases.h",
            "step_bench.cc",
            cases,
        ],
        linkopts = [
            "-static-libstdc++",
            "-static-libgcc",
        ],
        deps = [
            "//bench:timed_run",
            "//runtime:binding",
            "//ir:text",
            "//passes:infer_types",
            "//runtime:program_tables",
            "//runtime/cuda:executor",
            "//runtime/cuda:plan",
            "//runtime/reference:interpreter",
            "//training:derived_state",
        ],
    )
