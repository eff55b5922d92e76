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
#include <vector>

#include "ir/status.h"
#include "runtime/program.h"
#include "runtime/tensor.h"

namespace weft {

class ProgramExecutor {
 public:
  virtual ~ProgramExecutor() = default;
  virtual const Program& program() const = 0;
  /// Index of the input named `name` in program().inputs, or -1.
  int find_input(const std::string& name) const {
    const std::vector<ProgramInput>& inputs = program().inputs;
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (inputs[i].name == name) return static_cast<int>(i);
    }
    return -1;
  }
  /// Copies `value` into input `index`. Errors name the input and both types
  /// (check_input).
  virtual Status set_input(int index, const Tensor& value) = 0;
  /// set_input of the input named `name`; an error when there is none.
  Status set_input(const std::string& name, const Tensor& value) {
    const int index = find_input(name);
    if (index < 0) return Error{"program @" + program().name + " has no input %" + name};
    return set_input(index, value);
  }
  /// Starts copying `value` into input `index` ahead of the set_input that takes it, while
  /// the current step runs (#31's input overlap: cuda copies it on a second stream into a
  /// device slot; the set_input given the same tensor then takes that copy, and the step
  /// waits on it before its first read). The caller keeps `value` alive and unchanged
  /// until that step's run() returns (training/data/loader.h's `held` = 2). Here, for
  /// devices that read host memory as it is (cpu): nothing to start, set_input copies.
  /// Errors name the input and both types (check_input).
  virtual Status prefetch_input(int index, const Tensor& value) { return check_input(index, value); }
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

 protected:
  /// ok when `value` has input `index`'s type; else the error set_input returns.
  Status check_input(int index, const Tensor& value) const {
    const ProgramInput& in = program().inputs[index];
    if (value.type() == in.type) return Status::ok_status();
    return Error{"input %" + in.name + " of program @" + program().name + " is " +
                 in.type.to_string() + ", but the value given is " + value.type().to_string()};
  }
};

}  // namespace weft
