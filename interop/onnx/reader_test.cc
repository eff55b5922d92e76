// The reader's checks: every field of a TensorProto read as ONNX defines it, and every
// malformed or hostile input refused with a message naming what was wrong.
#include "interop/onnx/reader.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace weft::onnx_io {
namespace {
namespace reader_test {  // this file's names, apart in its package's unity test

namespace fs = std::filesystem;

std::string fresh_dir(const std::string& name) {
  std::string d = ::testing::TempDir() + "/" + name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

void write(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

onnx::TensorProto external(const std::string& name, const std::string& location, int64_t offset,
                           int64_t length) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::FLOAT);
  t.add_dims(2);
  t.set_data_location(onnx::TensorProto::EXTERNAL);
  auto add = [&](const std::string& k, const std::string& v) {
    auto* e = t.add_external_data();
    e->set_key(k);
    e->set_value(v);
  };
  add("location", location);
  if (offset >= 0) add("offset", std::to_string(offset));
  if (length >= 0) add("length", std::to_string(length));
  return t;
}

TEST(Reader, TypedFieldsAndRawData) {
  onnx::TensorProto t;
  t.set_name("w");
  t.set_data_type(onnx::TensorProto::FLOAT);
  t.add_dims(2);
  t.add_dims(2);
  for (float v : {1.f, 2.f, 3.f, 4.f}) t.add_float_data(v);
  StatusOr<Tensor> a = tensor_from_proto(t, "");
  ASSERT_TRUE(a.ok()) << a.error().to_string();
  EXPECT_EQ(*a, Tensor::from_vector<float>({2, 2}, {1, 2, 3, 4}));

  onnx::TensorProto written;
  tensor_to_proto(*a, &written);
  EXPECT_TRUE(written.has_raw_data());
  EXPECT_EQ(*tensor_from_proto(written, ""), *a);

  onnx::TensorProto b;
  b.set_data_type(onnx::TensorProto::BOOL);
  b.add_dims(3);
  for (int v : {0, 1, 7}) b.add_int32_data(v);
  EXPECT_EQ(tensor_from_proto(b, "")->to_doubles(), (std::vector<double>{0, 1, 1}));

  onnx::TensorProto h;  // f16 bits in int32_data: 0x3C00 is 1.0
  h.set_data_type(onnx::TensorProto::FLOAT16);
  h.add_int32_data(0x3C00);
  EXPECT_EQ(tensor_from_proto(h, "")->to_doubles(), (std::vector<double>{1.0}));
}

TEST(Reader, MalformedTensorsAreRefused) {
  onnx::TensorProto t;
  t.set_name("w");
  t.set_data_type(onnx::TensorProto::FLOAT);
  t.add_dims(2);
  t.add_dims(2);
  for (float v : {1.f, 2.f, 3.f}) t.add_float_data(v);
  EXPECT_EQ(tensor_from_proto(t, "").error().message,
            "tensor 'w': holds 3 values, its shape f32[2,2] needs 4");
  t.clear_float_data();
  t.add_float_data(1);  // "holds 1 values" before
  EXPECT_EQ(tensor_from_proto(t, "").error().message, "tensor 'w': holds 1 value, its shape f32[2,2] needs 4");
  t.clear_float_data();
  t.set_raw_data(std::string(15, '\0'));
  EXPECT_EQ(tensor_from_proto(t, "").error().message,
            "tensor 'w': holds 15 bytes of data, its shape f32[2,2] needs 16");
  // A shape that claims 8 GiB with no data behind it is refused before any allocation
  // (onnx_reader_fuzzer ran out of memory on one).
  t.set_dims(0, int64_t{1} << 30);
  t.set_dims(1, 2);
  EXPECT_EQ(tensor_from_proto(t, "").error().message,
            "tensor 'w': holds 15 bytes of data, its shape f32[1073741824,2] needs 8589934592");
  t.set_dims(1, 2);
  t.set_dims(0, -3);
  EXPECT_EQ(tensor_from_proto(t, "").error().message, "tensor 'w': negative dimension -3");
  t.set_dims(0, int64_t{1} << 40);
  t.set_dims(1, int64_t{1} << 40);
  EXPECT_EQ(tensor_from_proto(t, "").error().message,
            "tensor 'w': its shape [1099511627776,1099511627776] is too large");
  onnx::TensorProto i8;
  i8.set_name("q");
  i8.set_data_type(onnx::TensorProto::INT8);
  EXPECT_EQ(tensor_from_proto(i8, "").error().message,
            "tensor 'q': INT8 tensors: weft has no such dtype (it has f32, f64, f16, bf16, i32, "
            "i64, u8, bool)");
}

TEST(Reader, ExternalDataInsideTheModelFolder) {
  const std::string dir = fresh_dir("ext_ok");
  float values[4] = {9, 1.5, -2, 7};
  write(dir + "/weights.bin", std::string(reinterpret_cast<const char*>(values), sizeof values));
  StatusOr<Tensor> t = tensor_from_proto(external("w", "weights.bin", 8, 8), dir);
  ASSERT_TRUE(t.ok()) << t.error().to_string();
  EXPECT_EQ(*t, Tensor::from_vector<float>({2}, {-2, 7}));
  EXPECT_EQ(tensor_from_proto(external("w", "weights.bin", 12, -1), dir).error().message,
            "tensor 'w': holds 4 bytes of data, its shape f32[2] needs 8");
  EXPECT_EQ(tensor_from_proto(external("w", "weights.bin", 20, 8), dir).error().message,
            "tensor 'w': external data offset 20 and length 8 lie outside 'weights.bin' (16 bytes)");
}

TEST(Reader, ExternalDataThatLeavesTheFolderIsRefused) {
  const std::string dir = fresh_dir("ext_escape/model");
  write(dir + "/../secret.bin", std::string(8, 'x'));
  EXPECT_EQ(tensor_from_proto(external("w", "../secret.bin", 0, 8), dir).error().message,
            "tensor 'w': external data location '../secret.bin' leaves the model's folder; refused");
  const std::string absolute = fs::absolute(dir + "/../secret.bin").string();
  EXPECT_EQ(tensor_from_proto(external("w", absolute, 0, 8), dir).error().message,
            "tensor 'w': external data location '" + absolute + "' leaves the model's folder; refused");
  // A symlink inside the folder that points out of it.
  fs::create_symlink(fs::absolute(dir + "/../secret.bin"), dir + "/link.bin");
  EXPECT_EQ(tensor_from_proto(external("w", "link.bin", 0, 8), dir).error().message,
            "tensor 'w': external data location 'link.bin' leaves the model's folder; refused");
  EXPECT_EQ(tensor_from_proto(external("w", "weights.bin", 0, 8), "").error().message,
            "tensor 'w': external data ('weights.bin') is not allowed here");
}

TEST(Reader, FilesThatAreNotModels) {
  const std::string dir = fresh_dir("not_models");
  write(dir + "/text.onnx", "this is not protobuf");
  EXPECT_EQ(read_onnx_model(dir + "/text.onnx").error().message,
            dir + "/text.onnx: not an ONNX model (the protobuf ModelProto does not parse)");
  EXPECT_EQ(read_onnx_model(dir).error().message, dir + ": is a directory, not an ONNX file");
  // It said "the model imports no opset of the default ONNX domain".
  write(dir + "/empty.onnx", "");
  EXPECT_EQ(read_onnx_model(dir + "/empty.onnx").error().message,
            dir + "/empty.onnx: the file is empty, not an ONNX model");
  EXPECT_FALSE(read_onnx_model(dir + "/absent.onnx").ok());
  write(dir + "/t.pb", "\xff\xff");
  EXPECT_EQ(read_onnx_tensor(dir + "/t.pb").error().message, dir + "/t.pb: not an ONNX TensorProto");
}

TEST(Reader, OpsetOfTheDefaultDomain) {
  onnx::ModelProto m;
  auto* ml = m.add_opset_import();
  ml->set_domain("ai.onnx.ml");
  ml->set_version(3);
  m.add_opset_import()->set_version(13);
  std::string bytes;
  m.SerializeToString(&bytes);
  StatusOr<OnnxFile> f = parse_onnx_model(bytes, "m.onnx", "");
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->opset, 13);
}

}  // namespace reader_test
}  // namespace
}  // namespace weft::onnx_io
