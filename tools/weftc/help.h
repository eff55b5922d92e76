#pragma once
// weftc's usage line and each command's --help text (weftc.cc prints them; weftc_test
// pins parts of them). Kept apart from the commands so weftc.cc reads as the commands.

namespace weft::cli {

inline constexpr const char* kUsage =
    "weftc: the weft graph compiler\n"
    "\n"
    "usage: weftc <command> [args]\n"
    "\n"
    "commands:\n"
    "  check   parse, verify and infer the types of a graph\n"
    "  dump    print a graph after a pass, as text, JSON or DOT\n"
    "  run     execute a graph on .npy inputs and write .npy outputs\n"
    "  grad    differentiate a graph: a graph computing gradients\n"
    "  profile time every kernel of a graph's compiled step over several steps\n"
    "  viz     draw a graph as an interactive HTML page, or its memory plan as SVG\n"
    "\n"
    "`weftc <command> --help` describes each command.\n";

inline constexpr const char* kCheckHelp =
    "usage: weftc check FILE.wir [-o OUT.wir] [--backend=cuda]\n"
    "\n"
    "Parses FILE (.wir text, or its JSON form if it ends in .json), verifies its structure\n"
    "and infers every value's type. Errors are printed as FILE:LINE:COL: error: ... and\n"
    "the exit status is 1. With -o/--out, writes the graph with its inferred types.\n"
    "  --backend=cuda   also lower FILE for the GPU (no GPU needed) and fail, naming each\n"
    "                   op and its line, when any op would run on the host rather than on\n"
    "                   the device: \"does this run on the GPU?\"\n";

inline constexpr const char* kDumpHelp =
    "usage: weftc dump FILE.wir [--after=PASS] [--format=text|json|dot|ptx] [-o OUT]\n"
    "                 [--dump-dir=DIR] [--backend=cpu|cuda|reference] [--no-locations]\n"
    "\n"
    "Runs weft's pass pipeline on FILE up to and including PASS and prints the graph.\n"
    "  --after=PASS     stop after this pass (default: infer-types); `parse` prints the\n"
    "                   graph as parsed. Passes: infer-types, canonicalize,\n"
    "                   fold-constants, dce, cse, then for the cpu backend\n"
    "                   fold-transpose, fold-batch-matmul, decompose-composites,\n"
    "                   fuse-elementwise, schedule-memory.\n"
    "  --backend=B      cpu (default): the pipeline of `weftc run`; cuda: the GPU's\n"
    "                   (fusion limited to what the GPU kernels support, no row\n"
    "                   kernels); reference: the default pipeline only\n"
    "  --format=F       text (default), json, or dot (Graphviz: `| dot -Tsvg > g.svg`);\n"
    "                   with --backend=cuda also ptx: every generated kernel of the\n"
    "                   lowered graph as one PTX module (no GPU needed)\n"
    "  -o, --out=OUT    write to OUT instead of standard output\n"
    "  --dump-dir=DIR   also write the IR after every pass to DIR/NN-PASS.wir, .json\n"
    "                   and .dot (NN: the pass's position in the pipeline)\n"
    "  --no-locations   leave loc(...) out of the text form\n";

inline constexpr const char* kRunHelp =
    "usage: weftc run FILE.wir --input NAME=PATH.npy ... --out DIR\n"
    "                [--backend=cpu|cuda|reference]\n"
    "                [--check-numerics] [--max-memory=BYTES] [--allow-host-fallback]\n"
    "\n"
    "Executes the graph once. Every graph input, whatever its kind (data, param, state),\n"
    "must be given with --input; its .npy file must hold exactly the input's dtype and\n"
    "shape (no silent casts). Creates DIR if needed and writes the outputs as\n"
    "DIR/out_0.npy, DIR/out_1.npy, ... in return order, and every param or state input\n"
    "that an assign updated as DIR/NAME.npy, overwriting existing files. Nothing is\n"
    "written outside DIR: bytes of NAME other than letters, digits, '_', '-' and '.' (and\n"
    "a leading '.') are written %XX; an updated input whose file would be an output's is\n"
    "an error before anything is written.\n"
    "  --backend=B      cpu (default): fused, memory-planned, MLIR-generated kernels on\n"
    "                   all cores; cuda: the GPU (cuBLAS GEMMs, generated PTX kernels,\n"
    "                   weft's CUDA library kernels); reference: the reference\n"
    "                   interpreter (the oracle)\n"
    "  --check-numerics stop at the first op producing a NaN or an infinity and name it\n"
    "                   with its source location (inside a fused kernel: its body's op)\n"
    "  --max-memory=N   cpu, cuda: refuse to run when the planned arena and the inputs\n"
    "                   need more than N bytes (suffixes K, M, G: KiB, MiB, GiB); default:\n"
    "                   the machine's MemAvailable (cuda: the GPU's free memory)\n"
    "  --allow-host-fallback\n"
    "                   cuda: run the ops that have no CUDA kernel on the reference\n"
    "                   interpreter on the host (a debugging path) instead of refusing\n"
    "                   the graph (weftc check --backend=cuda lists them)\n";

inline constexpr const char* kProfileHelp =
    "usage: weftc profile FILE.wir --input NAME=PATH.npy ... [--steps=N] [--warmup=N] [--top=K]\n"
    "                     [--html=OUT.html]\n"
    "\n"
    "Compiles FILE for the cpu backend (the pipeline of `weftc run`), runs --warmup steps\n"
    "(default 3), then times every invocation over --steps steps (default 20) and prints\n"
    "the --top (default 25) by time: their share of the step, what they run, and the\n"
    "GFLOP/s and GB/s they achieve (runtime/cpu/cost.h: flops of GEMMs, convolutions and\n"
    "generated kernels; every operand read and result written once). Inputs are given as\n"
    "for `weftc run`; assigned parameters are updated every step, as in training.\n"
    "  --html=OUT       also write the viewer (`weftc viz`) of the compiled graph with\n"
    "                   every node filled by its share of the step (white to red) and\n"
    "                   its time in its label (a merged optimizer update counts on its\n"
    "                   first parameter's node)\n";

inline constexpr const char* kGradHelp =
    "usage: weftc grad FILE.wir --wrt NAME,NAME,... -o OUT.wir [--output=K] [--seed=NAME]\n"
    "\n"
    "Differentiates FILE's output K (default 0) by reverse-mode autodiff. OUT takes the\n"
    "same inputs as FILE, in the same order, and returns the gradients with respect to\n"
    "the --wrt inputs, in that order, each with its input's shape. The output must be a\n"
    "float scalar unless --seed=NAME is given: then OUT has one more input, NAME,\n"
    "appended last, holding the output's cotangent (its type is the output's). A --wrt\n"
    "input of integer dtype is an error; one the output does not depend on gets a zero\n"
    "gradient. The result is optimized (dce, cse) and written as .wir text (JSON if\n"
    "OUT ends in .json); without -o it is printed.\n";

inline constexpr const char* kVizHelp =
    "usage: weftc viz FILE.wir [-o OUT] [--after=PASS] [--backend=cpu|reference] [--memory]\n"
    "                [--title=TEXT]\n"
    "\n"
    "Draws FILE as one self-contained HTML page (inline SVG, CSS and JavaScript; it loads\n"
    "nothing from the network): the graph laid out by graphviz's `dot` (the `graphviz`\n"
    "package), after the same pipeline as `weftc dump`. Hover over a node (or click it to\n"
    "keep them) for its op, attributes, operand and result types, source location and\n"
    "builder path, fused body and, on the cpu backend, its arena buffer (offset, bytes).\n"
    "Builder paths (`encoder > split[1] > Linear(256->10)`) become nested clusters that\n"
    "collapse on a click; fused kernels are double-outlined; nodes are filled by what\n"
    "their result is (activation, gradient, parameter, optimizer state). On the cpu\n"
    "backend a second tab draws the memory plan: each arena buffer a rectangle over the\n"
    "schedule steps its value is live (x) at its arena offset (y), the peak of live bytes\n"
    "marked. `OUT.html#n12` opens the page on node 12, `#memory` on the memory tab.\n"
    "  -o, --out=OUT    write to OUT instead of standard output\n"
    "  --after=PASS     draw the graph after this pass (default: the whole pipeline;\n"
    "                   `parse`: as parsed). Passes as in `weftc dump --help`.\n"
    "  --backend=B      cpu (default): the cpu pipeline and its memory plan (parameters\n"
    "                   updated in place, as `weftc run` does); reference: the default\n"
    "                   pipeline, no memory plan\n"
    "  --memory         write the memory plan alone, as a standalone SVG (cpu only)\n"
    "  --title=TEXT     the page's title (default: @GRAPH)\n"
    "\n"
    "examples:\n"
    "  weftc viz examples/fashion_mnist/mlp_train_step.wir -o step.html\n"
    "  weftc viz examples/fashion_mnist/mlp_train_step.wir --memory -o step_memory.svg\n";

}  // namespace weft::cli
