"""An analysis test pinning weft.bzl's error for cross-compiling (its generator is built
for the target and run on the build machine, so the two CPUs must be the same)."""

def _impl(ctx):
    messages = [c.message for c in ctx.attr.target_under_test[0][AnalysisFailureInfo].causes.to_list()]
    found = [m for m in messages if ctx.attr.expected in m]
    return [AnalysisTestResultInfo(
        success = len(found) > 0,
        message = "expected an analysis error containing '%s'; got %s" % (ctx.attr.expected, messages),
    )]

# Analyzes target_under_test (a weft_library's NAME_generated) for a 32-bit ARM target
# (--cpu=armeabi-v7a, which Bazel's autoconfigured C++ toolchains can analyze) while the
# build machine stays k8, and expects `expected` in its error. (The host configuration
# is fixed for the whole build in this Bazel, so the target's CPU is the one to change.)
cross_compile_test = rule(
    implementation = _impl,
    analysis_test = True,
    attrs = {
        "target_under_test": attr.label(cfg = analysis_test_transition(settings = {
            "//command_line_option:cpu": "armeabi-v7a",
            "//command_line_option:allow_analysis_failures": "True",
        })),
        "expected": attr.string(),
    },
)
