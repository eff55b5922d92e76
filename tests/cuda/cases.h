#pragma once
// The CUDA backend's cases, compiled at build time ([CUDA]): gen_cases (which links
// codegen/ and MLIR) lowers each graph for the GPU and writes cases.cc — the graph as
// `.wir` text, the Program as constant tables and its kernels as one PTX module — so
// cases_test links runtime/cuda, the reference interpreter and the IR alone: no MLIR or
// LLVM, one self-contained binary that runs wherever a GPU is (tests/cuda/README.md).

#include <string>
#include <vector>

#include "runtime/program.h"

namespace weft::cuda_cases {

struct Case {
  std::string name;
  std::string wir;            ///< The type-inferred graph, parsed again by the test.
  Program (*program)();       ///< Its CUDA Program (codegen/cuda_backend.h).
  std::string ptx;            ///< Every generated kernel of the Program.
  std::vector<std::string> symbols;
  int steps = 1;              ///< > 1: a training step, run that many times.
};

/// Every case, in the order gen_cases wrote them.
const std::vector<Case>& all_cases();

}  // namespace weft::cuda_cases
