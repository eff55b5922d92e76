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
