#pragma once
// What runs a Program, whatever the device: runtime/cpu's and runtime/cuda's executors
// both implement it, so the Trainer (frontend/training.h) drives either the same way.
//
//   std::unique_ptr<ProgramExecutor> ex = ...;   // codegen::compile_for_cpu / _for_cuda
//   ex->set_input(ex->find_input("x"), x);       // host -> the executor's buffer
//   Status s = ex->run();                        // one step, then the updates
//   Tensor loss = ex->output(0);                 // -> host
//
// Parameters and optimizer state are inputs the step updates in place: they stay in the
// executor between steps, and input(i) copies the current value out.

#include <string>

#include "ir/status.h"
#include "runtime/program.h"
#include "runtime/tensor.h"

namespace weft {

class ProgramExecutor {
 public:
  virtual ~ProgramExecutor() = default;
  virtual const Program& program() const = 0;
  /// Index of the input named `name` in program().inputs, or -1.
  virtual int find_input(const std::string& name) const = 0;
  /// Copies `value` into input `index`. Errors name the input and both types.
  virtual Status set_input(int index, const Tensor& value) = 0;
  /// A host copy of input `index`'s current value.
  virtual Tensor input(int index) const = 0;
  /// One step: every invocation, then the updates.
  virtual Status run() = 0;
  virtual int num_outputs() const = 0;
  /// A host copy of output `index`.
  virtual Tensor output(int index) const = 0;
  /// Invocations that run through the reference interpreter (no kernel on this device).
  virtual int fallbacks() const = 0;
  /// One line per invocation: its kind and what it runs.
  virtual std::string describe() const = 0;
};

}  // namespace weft
