#pragma once
// The data both data-parallel driver tests train //tests/data_parallel:aot_regressor on:
// 52 samples of a linear target (x: f32[52,3], y: f32[52,2]), 6 global batches of 8 per
// epoch with 4 left over, written as npy files into `dir`; returns the driver flags that
// train 4 epochs on them (train and test sets alike) with fixed seeds.

#include <cstdint>
#include <string>

#include "formats/npy.h"
#include "runtime/tensor.h"

namespace weft::testing {

inline StatusOr<std::string> write_regressor_data(const std::string& dir) {
  Tensor x(Type{DType::f32, {52, 3}}), y(Type{DType::f32, {52, 2}});
  for (int64_t i = 0; i < 52; ++i) {
    float* r = x.data<float>() + i * 3;
    for (int j = 0; j < 3; ++j) r[j] = static_cast<float>((i * 7 + j * 3) % 11) / 11.0f;
    y.data<float>()[i * 2] = r[0] + r[1];
    y.data<float>()[i * 2 + 1] = r[2] - r[0];
  }
  const std::string xs = dir + "/x.npy", ys = dir + "/y.npy";
  WEFT_RETURN_IF_ERROR(write_npy(xs, x));
  WEFT_RETURN_IF_ERROR(write_npy(ys, y));
  return " --epochs=4 --seed=3 --shuffle-seed=5 --log-every=1000 --train=" + xs + "," + ys +
         " --test=" + xs + "," + ys;
}

}  // namespace weft::testing
