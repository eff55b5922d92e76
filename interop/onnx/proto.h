#pragma once
// The one include of ONNX's protobuf classes (onnx-ml.proto as Debian's libonnx-dev
// compiled it). //third_party:onnx sets the macros the header needs; everything in
// interop/onnx includes this file rather than the ONNX header.
#include <onnx/onnx-ml.pb.h>  // IWYU pragma: export
