#pragma once
// A hand-built Program that uses every part of the format program_source.h writes:
// every attribute kind (with NaN, infinities and control characters), several locations,
// clears, updates, input offsets, several kernels, and both buffer spaces. The writer
// (write_synthetic_source.cc) turns it into C++ at build time; program_tables_test
// assembles that source and compares it with this Program field by field.

#include "runtime/program.h"

namespace weft::testing {

Program synthetic_program();

}  // namespace weft::testing
