#pragma once
// Test helpers shared by the module parity tests (modules_parity_test,
// modules_grad_parity_test): options in PyTorch's positional order, fixture files and
// folders, and the error a module alone gives when built.

#include <cstdint>
#include <set>
#include <source_location>
#include <string>
#include <vector>

#include "frontend/flow.h"
#include "frontend/modules.h"
#include "runtime/tensor.h"

namespace weft::testing {

/// ConvOptions as PyTorch's positional arguments: kernel, stride, padding, dilation,
/// groups, bias, output_padding.
ConvOptions conv(int64_t k, int64_t s = 1, int64_t p = 0, int64_t d = 1, int64_t g = 1,
                 bool bias = true, int64_t op = 0);

/// The .npy file at `path`; a test failure naming the error (and an empty tensor) when it
/// cannot be read.
Tensor load_npy(const std::string& path);

/// The names of the folders in `dir`: one per fixture case.
std::set<std::string> fixture_dirs(const std::string& dir);

/// The error of building `m` alone on `inputs` ("(no error)" when it builds); its location
/// is the caller's call site.
std::string error_of(ModulePtr m, std::vector<InputSpec> inputs, bool training = true,
                        std::source_location loc = std::source_location::current());

}  // namespace weft::testing
