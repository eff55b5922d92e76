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
    NAME_model        cc_library of the model source (frontend; never in NAME itself): an
                      alias of one library per source list and deps in the package, so a
                      source that several libraries build is compiled once
    NAME_generator    the generator: the model source + tools/aot/generate_main.cc,
                      linking frontend, autodiff, passes and codegen (MLIR, LLVM); built
                      in the target configuration, like the tests that link the same
                      libraries, and run on the build machine (so no cross-compiling:
                      see _weft_generate below)
    NAME_generated    the action that runs it (mnemonic WeftGenerate), emitting
                        NAME.o          every kernel of both Programs (LLVM's TargetMachine,
                                        for `cpu`); backend "cpu" only

                        NAME_step.cc    the training step's Program (schedule, buffer
                        NAME_eval.cc    offsets, arena size); the eval forward's; both
                                        as constant tables (runtime/program_tables.h);
                                        backend "cuda": each with its kernels as one PTX
                                        module (a string constant) and their symbols
                        NAME.h, NAME.cc the parameter table (names, shapes, dtypes, kinds,
                                        initializers, as constant rows) and a typed
                                        class `cpp_class`
                        NAME_factory.cc driver::make_compiled_model, for binaries
                        NAME_weights.inc the first values of stored initializers (an
                                        imported model's weights), which NAME.cc embeds
                                        with the assembler's .incbin; empty otherwise
    NAME              cc_library: NAME.h + the above, depending only on
                      //training/aot:compiled_model, //runtime:program_tables and the
                      backend's registration (//runtime/cpu:backend, or
                      //runtime/cuda:backend: cudart and cuBLAS, never libcuda)
                      (runtime/, ir/ data types): no MLIR,
                      no LLVM, no passes
    NAME_factory      cc_library defining driver::make_compiled_model with this model
    NAME_test         cc_test: AOT vs the JIT Trainer on the same source and options:
                      same initial values, same losses (cpu: bit for bit over 30 steps;
                      cuda: 1e-6 over 100), same eval
                      outputs, interchangeable checkpoints, failed loads change nothing
    NAME_runtime_test cc_test linking NAME alone: trains a step with no libMLIR/libLLVM
                      mapped; prints the time from process start to the first step
    NAME_benchmark    cc_binary: median AOT and JIT step times in alternating rounds
With backend = "cuda", NAME_test and NAME_benchmark compare with Trainer{.backend =
"cuda"} and skip without a GPU (printing why); NAME_runtime_test checks the PTX (every
symbol present, `ptxas -arch=sm_90` assembles it) and, without a GPU, the pinned
"no CUDA device: ..." error; NAME_runtime_test and the binary link libstdc++ and libgcc
statically, so they can be carried to a GPU machine that has only CUDA's libraries.
With inference_only, NAME has no training step (its class has only the eval buffers
and run_eval()); NAME_test then compares eval outputs and checkpoint loading, and
NAME_benchmark times the eval forward.

weft_binary(name = NAME, ...) takes the same attributes and makes the library NAME_lib
(with NAME_test, NAME_runtime_test, NAME_benchmark) plus the cc_binary NAME: the
generic training driver //training/driver:main (flags, data, epochs, checkpoints,
evaluation) training this model.

Caching. The generator action (NAME_generated) has two inputs: the generator binary and
its command line. The binary is built from the model source and `model_deps`,
tools/aot/{generate_main,options}.cc and weft's compiler with the Trainer it links
(frontend, autodiff, passes, codegen, and the runtime/cpu executor the JIT uses); the
command line holds the compile options. Bazel reruns the action only when one of those
changes in content: editing the model source or an attribute reruns it (if the edit
changes the compiled generator: a comment-only edit that leaves the object file
identical does not); editing the training driver (training/driver's driver.cc, main.cc),
the tests' and benchmarks' mains or training/aot/compiled_model.cc does not: those only
recompile and relink NAME's users. (`bazel aquery 'mnemonic("WeftGenerate", //pkg:NAME_generated)'`
lists the action's inputs.)

Attributes:
    model           the model source file(s), or one ONNX file (`["resnet.onnx"]`): then
                    a generated source imports it (tools/aot/onnx_model.h: its one data
                    input with the batch as its first dimension; its initializers as
                    parameters whose first values the library embeds)
    model_deps      extra deps of the model source (frontend:flow and frontend:modules
                    are always there)
    batch           the training batch (static shapes)
    dtype           the float dtype passed to weft_model ("f32")
    loss            cross_entropy nll mse l1 smooth_l1 huber poisson_nll bce bce_with_logits
                    kl_div sigmoid_focal hinge_embedding
    loss_args       {"label_smoothing": "0.1"}, {"class_weight": "0.5,2,1"} (cross_entropy,
                    nll), {"beta": "1"} (smooth_l1), {"delta": "1"} (huber),
                    {"log_input": "true", "full": "false", "poisson_eps": "1e-8"} (poisson_nll),
                    {"focal_alpha": "0.25", "focal_gamma": "2"} (sigmoid_focal),
                    {"margin": "1"} (hinge_embedding)
    optimizer       sgd adam adamw rmsprop adagrad radam nadam
    optimizer_args  PyTorch's names, as strings: lr momentum dampening nesterov
                    weight_decay beta1 beta2 eps amsgrad alpha centered lr_decay
                    initial_accumulator_value momentum_decay (nadam) max_grad_norm
                    accumulate_steps (gradient accumulation: an update every N steps)
                    param_groups ("PATH:lr=X:weight_decay=Y,PATH2:lr=Z": groups by label path)
                    scheduled_momentum ("true": the momentum, beta1 for the Adam family, is
                    the step input weft.momentum, which the driver's onecycle and cyclic
                    schedules cycle);
                    unset ones take PyTorch's defaults (SGD needs lr)
    eval_batch      the evaluation batch (0: the training batch)
    backend         "cpu" (default) or "cuda": the device the Programs are compiled for
                    (runtime/backend.h): an entry of devices.bzl's WEFT_DEVICES, which
                    says what the macros link for it. cuda: codegen::compile_cuda_program,
                    kernels as PTX; the step runs as one CUDA graph with host fallback refused, so a
                    model with ops that have no CUDA kernel yet builds but its binary
                    refuses the step at run time (NAME.h's header says which ops).
                    With data_parallel: NCCL, one GPU per local rank (not yet run on a GPU)
    cpu             the CPU the kernels are compiled for: "native" (the build machine)
                    or an LLVM CPU name ("x86-64-v3", "znver4"); unused for cuda
    inference_only  only the eval forward: no training step, no optimizer slots
    data_parallel   the training step averages every gradient and the loss over the
                    ranks of `mpirun`, srun or the torchrun variables (an all_reduce op
                    each, runtime/collective; NCCL on cuda), so the
                    binary trains with --data-parallel; alone it trains as without them.
                    Off by default: the ops' result buffers grow the arena (mlp: 6.0 ->
                    8.4 MiB) and each costs a copy per step with one process
    cpp_class       the generated class, "ns::Class" (default weft_aot::CamelCaseName)
    precision       "f32" (default), or mixed precision "bf16" / "f16": the step is the JIT
                    Trainer's with TrainOptions::precision (autocast, passes/autocast.h;
                    f16 with dynamic loss scaling, autodiff/loss_scale.h, whose scale and
                    skipped count are state values saved in checkpoints). Parameters,
                    optimizer slots, checkpoints and the eval forward stay f32. The binary
                    trains at this precision only (its --precision accepts it alone);
                    another value is refused by the generator
    fuse_attention  the attention pattern softmax(q·kᵀ·scale + mask)·v found before autodiff
                    (TrainOptions::fuse_attention, passes/fuse_attention.h): one
                    `attention` node and one `attention_grad`, which the cuda backend runs
                    on its attention kernels and cpu decomposes again; off by default, as
                    the Trainer's (bench/aot's transformer_fa and transformer_cuda_fa)
"""

load("@rules_cc//cc:defs.bzl", "cc_binary", "cc_library", "cc_test")
load(":devices.bzl", "weft_device")

def _camel(name):
    return "".join([p.capitalize() for p in name.split("_")])

def _flags(batch, dtype, loss, loss_args, optimizer, optimizer_args, eval_batch, cpu, inference_only,
           data_parallel, backend, precision, fuse_attention):
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
    if data_parallel:
        flags.append("--data_parallel")
    if backend != "cpu":
        flags.append("--backend=" + backend)
    if precision != "f32":  # the generator refuses a bad value (tools/aot/options_test)
        flags.append("--precision=" + precision)
    if fuse_attention:
        flags.append("--fuse_attention")
    return flags

# The files the generator writes, by its flag (--header=..., --object=...); `object`
# only for a device whose kernels are object code (devices.bzl).
_OUTPUTS = ["header", "source", "factory", "step_source", "eval_source", "weights", "object"]

WeftCpuInfo = provider(doc = "The CPU a configuration builds for.", fields = ["cpu"])

def _weft_cpu_impl(ctx):
    return [WeftCpuInfo(cpu = ctx.var["TARGET_CPU"])]

# Instantiated once, as //tools/aot:host_cpu: read through a host-configured attribute,
# it gives the CPU of the machine that runs build actions.
weft_cpu = rule(implementation = _weft_cpu_impl)

def _weft_generate_impl(ctx):
    host_cpu = ctx.attr._host_cpu[WeftCpuInfo].cpu
    if ctx.var["TARGET_CPU"] != host_cpu:
        fail(("%s: weft_library cannot cross-compile: its generator is built for the target " +
              "CPU (%s) and runs on the build machine (%s). Build AOT models natively.") %
             (ctx.label, ctx.var["TARGET_CPU"], host_cpu))
    outputs = [getattr(ctx.outputs, out) for out in _OUTPUTS if getattr(ctx.outputs, out)]
    args = ctx.actions.args()
    args.add_all(ctx.attr.names)
    for out in _OUTPUTS:
        if getattr(ctx.outputs, out):
            args.add("--%s=%s" % (out, getattr(ctx.outputs, out).path))
    args.add_all(ctx.attr.flags)
    # Through a shell only to drop the generator's one-line summary from Bazel's output
    # (errors go to stderr).
    ctx.actions.run_shell(
        inputs = ctx.files.data,
        tools = [ctx.attr.generator[DefaultInfo].files_to_run],
        command = '"$@" > /dev/null',
        arguments = [ctx.executable.generator.path, args],
        outputs = outputs,
        mnemonic = "WeftGenerate",
        progress_message = "Compiling the weft model %s ahead of time" % ctx.label,
    )

# Runs the generator. Not a genrule: a genrule builds its tools in the host
# configuration, and the generator links weft's compiler and runtime, which the
# library's tests and users build in the target configuration — so a cold build compiled
# all of them twice. Here the generator is built for the target (cfg = "target") and run
# on the build machine, which is valid only when the two are the same machine: the
# kernels are compiled for the build machine anyway (`cpu`), so weft_library does not
# support cross-compiling, and the rule fails (above) when the target CPU is not the
# host's.
_weft_generate = rule(
    implementation = _weft_generate_impl,
    attrs = dict(
        {
            "generator": attr.label(executable = True, cfg = "target", mandatory = True),
            "names": attr.string_list(doc = "--name, --class, --include"),
            "flags": attr.string_list(doc = "The compile options (_flags)."),
            "data": attr.label_list(allow_files = True,
                                    doc = "Files the model source reads (an ONNX model)."),
            "_host_cpu": attr.label(default = "//tools/aot:host_cpu", cfg = "host",
                                    providers = [WeftCpuInfo]),
        },
        **{out: attr.output(mandatory = out != "object") for out in _OUTPUTS}
    ),
)

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
        data_parallel,
        cpp_class,
        visibility,
        tags,
        backend,
        precision,
        fuse_attention):
    device = weft_device(name, backend)

    # An ONNX file as the model: a generated model source imports it (tools/aot/onnx_model.h).
    model_data = []
    if len(model) == 1 and model[0].endswith(".onnx"):
        source = library + "_onnx_model.cc"
        native.genrule(
            name = library + "_onnx_model",
            outs = [source],
            cmd = ("printf '%%s\\n' '// Generated by weft_library: the model %s/%s.' " +
                   "'#include \"tools/aot/onnx_model.h\"' " +
                   "'weft::StatusOr<weft::aot::ModelSource> weft_model(int64_t batch, weft::DType dtype) {' " +
                   "'  return weft::aot::onnx_model_source(\"%s/%s\", batch, dtype);' '}' > $@") %
                  (native.package_name(), model[0], native.package_name(), model[0]),
            tags = tags,
        )
        model_data = model
        model = [source]
        model_deps = model_deps + ["//tools/aot:onnx_model"]

    # The runtime-only binaries of a device whose machines lack this one's libraries (cuda)
    # carry their own (devices.bzl). Not the JIT-comparison ones, which link libMLIR and
    # libLLVM (shared, over the shared libstdc++) and never leave this machine.
    carried = device.carried_linkopts

    # The model source is compiled once per package however many libraries build it (the
    # suite's mlp has five variants): NAME_model is an alias of one library per source list
    # and deps, named after them.
    shared_model = "_".join(
        [m.replace(":", "_").replace("/", "_").replace(".", "_").replace("@", "_") for m in model] +
        ["lib", str(hash(repr(model_deps + model_data)))],
    ).lstrip("_")
    if not native.existing_rule(shared_model):
        cc_library(
            name = shared_model,
            srcs = model,
            data = model_data,
            deps = [
                "//frontend:flow",
                "//frontend:modules",
                "//tools/aot:model",
            ] + model_deps,
            alwayslink = True,
            tags = tags,
        )
    native.alias(
        name = library + "_model",
        actual = ":" + shared_model,
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
        # The stored initializers of an imported model, then the eval forward as ONNX
        # without its weights (--export-onnx), which NAME.cc embeds with the assembler's
        # .incbin: an input of its compile action.
        "weights": library + "_weights.inc",
    }
    if device.object:
        outs["object"] = library + ".o"
    _weft_generate(
        name = library + "_generated",
        generator = ":" + library + "_generator",
        names = [
            "--name=" + library,
            "--class=" + (cpp_class or "weft_aot::" + _camel(library)),
            "--include=%s/%s.h" % (native.package_name(), library),
        ],
        flags = _flags(batch, dtype, loss, loss_args, optimizer, optimizer_args, eval_batch, cpu,
                       inference_only, data_parallel, backend, precision, fuse_attention),
        data = model_data,
        tags = tags,
        **outs
    )
    cc_library(
        name = library,
        srcs = [outs["source"], outs["step_source"], outs["eval_source"]] +
               ([outs["object"]] if device.object else []),
        hdrs = [outs["header"]],
        textual_hdrs = [outs["weights"]],
        linkopts = ["-lm"],
        deps = [
            "//runtime:program_tables",
            "//training/aot:compiled_model",
            device.backend,
        ],
        visibility = visibility,
        tags = tags,
    )
    cc_library(
        name = library + "_factory",
        srcs = [outs["factory"]],
        deps = [
            ":" + library,
            "//training/driver:trainable",
        ],
        alwayslink = True,
        visibility = visibility,
        tags = tags,
    )

    # The tests and the benchmark: each is a body from tools/aot linked with NAME_factory;
    # NAME_test and NAME_benchmark also link the model source (the JIT side), while
    # NAME_runtime_test links the generated library alone. (Bazel's default test size,
    # medium, covers NAME_test's steps.)
    factory = ":" + library + "_factory"
    model_lib = ":" + library + "_model"
    gtest = "//third_party:gtest_main"
    for make, suffix, deps, linkopts in [
        (cc_test, "_test", ["//tools/aot:jit_compare_test", model_lib, gtest], []),
        (cc_test, "_runtime_test", ["//tools/aot:runtime_only_test", gtest], carried),
        (cc_binary, "_benchmark", ["//tools/aot:benchmark_main", model_lib], []),
    ]:
        make(
            name = name + suffix,
            deps = [factory] + deps,
            linkopts = linkopts,
            # One self-contained file to carry (a cc_test links shared objects otherwise).
            linkstatic = bool(linkopts),
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
        data_parallel = False,
        cpp_class = None,
        visibility = None,
        tags = [],
        backend = "cpu",
        precision = "f32",
        fuse_attention = False):
    """A model compiled ahead of time into a runtime-only cc_library (see the file's header)."""
    _weft_aot(name, name, model, model_deps, batch, dtype, loss, loss_args, optimizer,
              optimizer_args, eval_batch, cpu, inference_only, data_parallel, cpp_class, visibility,
              tags, backend, precision, fuse_attention)

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
        data_parallel = False,
        cpp_class = None,
        visibility = None,
        tags = [],
        backend = "cpu",
        precision = "f32",
        fuse_attention = False):
    """A training binary: weft_library NAME_lib + the generic driver (see the file's header)."""
    _weft_aot(name, name + "_lib", model, model_deps, batch, dtype, loss, loss_args, optimizer,
              optimizer_args, eval_batch, cpu, False, data_parallel,
              cpp_class or "weft_aot::" + _camel(name), visibility, tags, backend, precision,
              fuse_attention)
    device = weft_device(name, backend)
    cc_binary(
        name = name,
        deps = [
            ":" + name + "_lib_factory",
            # cuda: one process, no Open MPI linked (the GPU machine may lack it), unless
            # data_parallel (NCCL over the launch's MPI or Gloo world).
            device.data_parallel_driver_main if data_parallel else device.driver_main,
        ],
        # Carried to a machine of the device (cuda): libstdc++ and libgcc inside.
        linkopts = device.carried_linkopts,
        visibility = visibility,
        tags = tags,
    )
