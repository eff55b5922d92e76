"""weft_library and weft_binary: a model compiled ahead of time by `bazel build`.

Modelled on TensorFlow's tf_library. A model source (C++ that defines the network with
the FlowBuilder, entry point in tools/aot/model.h) and compile options go in; a
cc_library that needs only weft's runtime comes out:

    load("//tools/aot:weft.bzl", "weft_binary", "weft_library")

    weft_library(
        name = "mlp",
        model = ["mlp_model.cc"],     # defines weft_model(batch, dtype)
        batch = 128,
        loss = "cross_entropy",
        optimizer = "adam",
        optimizer_args = {"lr": "1e-3"},
    )

What one weft_library(name = NAME) defines:
    NAME_model        cc_library of the model source (frontend; never in NAME itself)
    NAME_generator    the host generator: the model source + tools/aot/generate_main.cc,
                      linking frontend, autodiff, passes and codegen (MLIR, LLVM); built
                      in Bazel's host configuration (.bazelrc's --host_cxxopt)
    NAME_generated    the genrule that runs it, emitting
                        NAME.o          every kernel of both Programs (LLVM's TargetMachine,
                                        for `cpu`)
                        NAME_step.cc    the training step's Program (schedule, buffer
                        NAME_eval.cc    offsets, arena size); the eval forward's
                        NAME.h, NAME.cc the parameter table (names, shapes, dtypes, kinds,
                                        initializers) and a typed class `cpp_class`
                        NAME_factory.cc driver::make_compiled_model, for binaries
    NAME              cc_library: NAME.h + the above, depending only on
                      //runtime/aot:compiled_model (runtime/, ir/ data types): no MLIR,
                      no LLVM, no passes
    NAME_factory      cc_library defining driver::make_compiled_model with this model
    NAME_test         cc_test: AOT vs the JIT Trainer on the same source and options:
                      same initial values, same losses over 100 steps (1e-6), same eval
                      outputs, interchangeable checkpoints, failed loads change nothing
    NAME_runtime_test cc_test linking NAME alone: trains a step with no libMLIR/libLLVM
                      mapped; prints the time from process start to the first step
    NAME_benchmark    cc_binary: median AOT and JIT step times in alternating rounds
With inference_only, NAME has no training step (its class has only the eval buffers
and run_eval()); NAME_test then compares eval outputs and checkpoint loading, and
NAME_benchmark times the eval forward.

weft_binary(name = NAME, ...) takes the same attributes and makes the library NAME_lib
(with NAME_test, NAME_runtime_test, NAME_benchmark) plus the cc_binary NAME: the
generic training driver //runtime/driver:main (flags, data, epochs, checkpoints,
evaluation) training this model.

Caching. The generator action (NAME_generated) has two inputs: the generator binary and
its command line. The binary is built from the model source and `model_deps`,
tools/aot/{generate_main,options}.cc and weft's compiler with the Trainer it links
(frontend, autodiff, passes, codegen, and the runtime/cpu executor the JIT uses); the
command line holds the compile options. Bazel reruns the action only when one of those
changes in content: editing the model source or an attribute reruns it (if the edit
changes the compiled generator: a comment-only edit that leaves the object file
identical does not); editing the training driver (runtime/driver's driver.cc, main.cc),
the tests' and benchmarks' mains or runtime/aot/compiled_model.cc does not: those only
recompile and relink NAME's users. (`bazel aquery 'mnemonic("Genrule", //pkg:NAME_generated)'`
lists the action's inputs.)

Attributes:
    model           the model source file(s)
    model_deps      extra deps of the model source (frontend:flow and frontend:modules
                    are always there)
    batch           the training batch (static shapes)
    dtype           the float dtype passed to weft_model ("f32")
    loss            cross_entropy nll mse l1 smooth_l1 bce bce_with_logits kl_div
    loss_args       {"label_smoothing": "0.1"}, {"beta": "1"} (smooth_l1)
    optimizer       sgd adam adamw rmsprop adagrad
    optimizer_args  PyTorch's names, as strings: lr momentum dampening nesterov
                    weight_decay beta1 beta2 eps amsgrad alpha centered lr_decay
                    initial_accumulator_value max_grad_norm; unset ones take PyTorch's
                    defaults (SGD needs lr)
    eval_batch      the evaluation batch (0: the training batch)
    cpu             the CPU the kernels are compiled for: "native" (the build machine)
                    or an LLVM CPU name ("x86-64-v3", "znver4")
    inference_only  only the eval forward: no training step, no optimizer slots
    cpp_class       the generated class, "ns::Class" (default weft_aot::CamelCaseName)
"""

load("@rules_cc//cc:defs.bzl", "cc_binary", "cc_library", "cc_test")

def _camel(name):
    return "".join([p.capitalize() for p in name.split("_")])

def _flags(batch, dtype, loss, loss_args, optimizer, optimizer_args, eval_batch, cpu, inference_only):
    flags = [
        "--batch=%d" % batch,
        "--dtype=" + dtype,
        "--loss=" + loss,
        "--optimizer=" + optimizer,
        "--eval_batch=%d" % eval_batch,
        "--cpu=" + cpu,
    ]
    for k, v in sorted(loss_args.items()) + sorted(optimizer_args.items()):
        flags.append("--%s=%s" % (k, v))
    if inference_only:
        flags.append("--inference_only")
    return flags

def _weft_aot(
        name,
        library,
        model,
        model_deps,
        batch,
        dtype,
        loss,
        loss_args,
        optimizer,
        optimizer_args,
        eval_batch,
        cpu,
        inference_only,
        cpp_class,
        visibility,
        tags):
    cc_library(
        name = library + "_model",
        srcs = model,
        deps = [
            "//frontend:flow",
            "//frontend:modules",
            "//tools/aot:model",
        ] + model_deps,
        alwayslink = True,
        tags = tags,
    )
    cc_binary(
        name = library + "_generator",
        deps = [
            ":" + library + "_model",
            "//tools/aot:generate_main",
        ],
        tags = tags,
    )
    outs = {
        "header": library + ".h",
        "source": library + ".cc",
        "factory": library + "_factory.cc",
        "step_source": library + "_step.cc",
        "eval_source": library + "_eval.cc",
        "object": library + ".o",
    }
    cmd = " ".join(
        ["$(location :%s_generator)" % library, "--name=" + library] +
        ["--class=" + (cpp_class or "weft_aot::" + _camel(library))] +
        ["--include=%s/%s.h" % (native.package_name(), library)] +
        ["--%s=$(location %s)" % (k, v) for k, v in sorted(outs.items())] +
        _flags(batch, dtype, loss, loss_args, optimizer, optimizer_args, eval_batch, cpu, inference_only),
    ) + " > /dev/null"
    native.genrule(
        name = library + "_generated",
        outs = [v for _, v in sorted(outs.items())],
        cmd = cmd,
        tools = [":" + library + "_generator"],
        message = "Compiling the weft model %s ahead of time" % library,
        tags = tags,
    )
    cc_library(
        name = library,
        srcs = [outs["source"], outs["step_source"], outs["eval_source"], outs["object"]],
        hdrs = [outs["header"]],
        linkopts = ["-lm"],
        deps = [
            "//runtime:program_tables",
            "//runtime/aot:compiled_model",
        ],
        visibility = visibility,
        tags = tags,
    )
    cc_library(
        name = library + "_factory",
        srcs = [outs["factory"]],
        deps = [
            ":" + library,
            "//runtime/driver:trainable",
        ],
        alwayslink = True,
        visibility = visibility,
        tags = tags,
    )
    cc_test(
        name = name + "_test",
        size = "medium",
        deps = [
            ":" + library + "_factory",
            ":" + library + "_model",
            "//tools/aot:jit_compare_test",
            "//third_party:gtest_main",
        ],
        tags = tags,
    )
    cc_test(
        name = name + "_runtime_test",
        deps = [
            ":" + library + "_factory",
            "//tools/aot:runtime_only_test",
            "//third_party:gtest_main",
        ],
        tags = tags,
    )
    cc_binary(
        name = name + "_benchmark",
        deps = [
            ":" + library + "_factory",
            ":" + library + "_model",
            "//tools/aot:benchmark_main",
        ],
        tags = tags,
    )

def weft_library(
        name,
        model,
        batch,
        model_deps = [],
        dtype = "f32",
        loss = "cross_entropy",
        loss_args = {},
        optimizer = "adam",
        optimizer_args = {},
        eval_batch = 0,
        cpu = "native",
        inference_only = False,
        cpp_class = None,
        visibility = None,
        tags = []):
    """A model compiled ahead of time into a runtime-only cc_library (see the file's header)."""
    _weft_aot(name, name, model, model_deps, batch, dtype, loss, loss_args, optimizer,
              optimizer_args, eval_batch, cpu, inference_only, cpp_class, visibility, tags)

def weft_binary(
        name,
        model,
        batch,
        model_deps = [],
        dtype = "f32",
        loss = "cross_entropy",
        loss_args = {},
        optimizer = "adam",
        optimizer_args = {},
        eval_batch = 0,
        cpu = "native",
        cpp_class = None,
        visibility = None,
        tags = []):
    """A training binary: weft_library NAME_lib + the generic driver (see the file's header)."""
    _weft_aot(name, name + "_lib", model, model_deps, batch, dtype, loss, loss_args, optimizer,
              optimizer_args, eval_batch, cpu, False, cpp_class or "weft_aot::" + _camel(name),
              visibility, tags)
    cc_binary(
        name = name,
        deps = [
            ":" + name + "_lib_factory",
            "//runtime/driver:main",
        ],
        visibility = visibility,
        tags = tags,
    )
