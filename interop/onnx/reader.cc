#include "interop/onnx/reader.h"

#include <google/protobuf/io/coded_stream.h>

#include <cstring>
#include <filesystem>
#include <limits>
#include <new>

#include "formats/file_io.h"
#include "ir/checked_math.h"
#include "ir/text_util.h"

namespace weft::onnx_io {
namespace {

namespace fs = std::filesystem;

// Protobuf refuses messages of 2 GiB and more; so does weft, before reading them.
constexpr uint64_t kMaxMessageBytes = std::numeric_limits<int32_t>::max();

// The largest tensor weft materializes from a file: a guard against a dims field that
// claims petabytes, checked before allocating.
constexpr int64_t kMaxTensorBytes = int64_t{1} << 36;  // 64 GiB

template <typename Message>
bool parse_message(std::string_view bytes, Message* m) {
  google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t*>(bytes.data()),
                                            static_cast<int>(bytes.size()));
  in.SetTotalBytesLimit(static_cast<int>(kMaxMessageBytes));
  return m->ParseFromCodedStream(&in) && in.ConsumedEntireMessage();
}

StatusOr<std::string> read_bounded(const std::string& path) {
  WEFT_ASSIGN_OR_RETURN(ReadOnlyFile f, ReadOnlyFile::open(path));
  if (f.is_directory()) return Error{path + ": is a directory, not an ONNX file"};
  if (f.is_regular() && f.size() >= kMaxMessageBytes) {
    return Error{path + ": " + std::to_string(f.size()) +
                 " bytes is past protobuf's 2 GiB limit (store the weights as external data)"};
  }
  return read_file(path);
}

// The number of values a TensorProto's typed field holds for `dtype` (onnx.proto: f16,
// bf16, bool and u8 live in int32_data).
int64_t typed_count(const onnx::TensorProto& t, DType dtype) {
  switch (dtype) {
    case DType::f32: return t.float_data_size();
    case DType::f64: return t.double_data_size();
    case DType::i64: return t.int64_data_size();
    default: return t.int32_data_size();
  }
}

// Whether the data (`raw`, or the typed field when raw is null) fills `type` exactly:
// checked before the tensor is allocated, so a shape that claims more than the file
// holds costs nothing.
Status check_data_size(const onnx::TensorProto& t, const Type& type, const std::string* raw,
                       const std::string& what) {
  if (raw != nullptr) {
    if (raw->size() == type.bytes()) return {};
    return Error{what + ": holds " + std::to_string(raw->size()) + " bytes of data, its shape " +
                 type.to_string() + " needs " + std::to_string(type.bytes())};
  }
  const int64_t count = typed_count(t, type.dtype);
  if (count == type.numel()) return {};
  return Error{what + ": holds " + counted(count, "value") + ", its shape " +
               type.to_string() + " needs " + std::to_string(type.numel())};
}

template <typename Field, typename Store>
void copy_field(const Field& field, int64_t n, Store store) {
  for (int64_t i = 0; i < n; ++i) store(i, field.Get(static_cast<int>(i)));
}

// The bytes of an external-data tensor, read from inside `dir` only.
StatusOr<std::string> external_bytes(const onnx::TensorProto& t, const std::string& dir,
                                     const std::string& what) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& kv : t.external_data()) {
    auto number = [&](int64_t* out) -> Status {
      try {
        size_t used = 0;
        long long v = std::stoll(kv.value(), &used);
        if (used != kv.value().size() || v < 0) throw std::invalid_argument("");
        *out = v;
      } catch (const std::exception&) {
        return Error{what + ": external data " + kv.key() + " '" + kv.value() +
                     "' is not a non-negative integer"};
      }
      return {};
    };
    if (kv.key() == "location") location = kv.value();
    if (kv.key() == "offset") WEFT_RETURN_IF_ERROR(number(&offset));
    if (kv.key() == "length") WEFT_RETURN_IF_ERROR(number(&length));
  }
  if (location.empty()) return Error{what + ": external data without a location"};
  if (dir.empty()) return Error{what + ": external data ('" + location + "') is not allowed here"};
  fs::path rel(location);
  std::error_code ec;
  const fs::path base = fs::weakly_canonical(fs::path(dir), ec);
  const fs::path file = fs::weakly_canonical(fs::path(dir) / rel, ec);
  auto [b, f] = std::mismatch(base.begin(), base.end(), file.begin(), file.end());
  if (rel.is_absolute() || ec || b != base.end()) {
    return Error{what + ": external data location '" + location +
                 "' leaves the model's folder; refused"};
  }
  WEFT_ASSIGN_OR_RETURN(std::string bytes, read_bounded(file.string()));
  if (offset > static_cast<int64_t>(bytes.size()) ||
      (length >= 0 && length > static_cast<int64_t>(bytes.size()) - offset)) {
    return Error{what + ": external data offset " + std::to_string(offset) + " and length " +
                 std::to_string(length) + " lie outside '" + location + "' (" +
                 std::to_string(bytes.size()) + " bytes)"};
  }
  return bytes.substr(static_cast<size_t>(offset),
                      length < 0 ? std::string::npos : static_cast<size_t>(length));
}

}  // namespace

std::string onnx_type_name(int elem_type) {
  if (onnx::TensorProto_DataType_IsValid(elem_type)) {
    return onnx::TensorProto_DataType_Name(static_cast<onnx::TensorProto_DataType>(elem_type));
  }
  return "element type " + std::to_string(elem_type);
}

StatusOr<DType> dtype_from_onnx(int elem_type) {
  switch (elem_type) {
    case onnx::TensorProto::FLOAT: return DType::f32;
    case onnx::TensorProto::DOUBLE: return DType::f64;
    case onnx::TensorProto::FLOAT16: return DType::f16;
    case onnx::TensorProto::BFLOAT16: return DType::bf16;
    case onnx::TensorProto::INT32: return DType::i32;
    case onnx::TensorProto::INT64: return DType::i64;
    case onnx::TensorProto::UINT8: return DType::u8;
    case onnx::TensorProto::BOOL: return DType::boolean;
    default: break;
  }
  return Error{onnx_type_name(elem_type) +
               " tensors: weft has no such dtype (it has f32, f64, f16, bf16, i32, i64, u8, bool)"};
}

int onnx_elem_type(DType dtype) {
  switch (dtype) {
    case DType::f32: return onnx::TensorProto::FLOAT;
    case DType::f64: return onnx::TensorProto::DOUBLE;
    case DType::f16: return onnx::TensorProto::FLOAT16;
    case DType::bf16: return onnx::TensorProto::BFLOAT16;
    case DType::i32: return onnx::TensorProto::INT32;
    case DType::i64: return onnx::TensorProto::INT64;
    case DType::u8: return onnx::TensorProto::UINT8;
    case DType::boolean: return onnx::TensorProto::BOOL;
  }
  return onnx::TensorProto::UNDEFINED;
}

StatusOr<Tensor> tensor_from_proto(const onnx::TensorProto& t, const std::string& dir) {
  const std::string what = t.name().empty() ? std::string("tensor") : "tensor '" + t.name() + "'";
  if (t.segment().end() != 0 || t.segment().begin() != 0) {
    return Error{what + ": segmented tensors are not supported"};
  }
  StatusOr<DType> dtype = dtype_from_onnx(t.data_type());
  if (!dtype.ok()) return Error{what + ": " + dtype.error().message};
  std::vector<int64_t> dims(t.dims().begin(), t.dims().end());
  for (int64_t d : dims) {
    if (d < 0) return Error{what + ": negative dimension " + std::to_string(d)};
  }
  std::optional<int64_t> bytes = checked_extent(dims, static_cast<int64_t>(dtype_size(*dtype)));
  if (!bytes || *bytes > kMaxTensorBytes) {
    return Error{what + ": its shape " + Shape(dims).to_string() + " is too large"};
  }
  const Type type{*dtype, Shape(dims)};
  std::string external;
  if (t.data_location() == onnx::TensorProto::EXTERNAL) {
    WEFT_ASSIGN_OR_RETURN(external, external_bytes(t, dir, what));
  }
  const std::string* raw = t.data_location() == onnx::TensorProto::EXTERNAL ? &external
                           : t.has_raw_data()                               ? &t.raw_data()
                                                                            : nullptr;
  WEFT_RETURN_IF_ERROR(check_data_size(t, type, raw, what));
  WEFT_ASSIGN_OR_RETURN(Tensor out, Tensor::try_create(type));
  const int64_t n = out.numel();
  if (raw != nullptr) {
    if (!raw->empty()) std::memcpy(out.raw_data(), raw->data(), raw->size());
    return out;
  }
  switch (*dtype) {
    case DType::f32:
      copy_field(t.float_data(), n, [&](int64_t i, float v) { out.data<float>()[i] = v; });
      break;
    case DType::f64:
      copy_field(t.double_data(), n, [&](int64_t i, double v) { out.data<double>()[i] = v; });
      break;
    case DType::i64:
      copy_field(t.int64_data(), n, [&](int64_t i, int64_t v) { out.data<int64_t>()[i] = v; });
      break;
    case DType::i32:
      copy_field(t.int32_data(), n, [&](int64_t i, int32_t v) { out.data<int32_t>()[i] = v; });
      break;
    case DType::u8:
    case DType::boolean:
      copy_field(t.int32_data(), n, [&](int64_t i, int32_t v) {
        out.data<uint8_t>()[i] = static_cast<uint8_t>(*dtype == DType::boolean ? v != 0 : v);
      });
      break;
    case DType::f16:
    case DType::bf16:
      // The 16 bits of each element, stored in int32_data (onnx.proto).
      copy_field(t.int32_data(), n, [&](int64_t i, int32_t v) {
        out.data<uint16_t>()[i] = static_cast<uint16_t>(v);
      });
      break;
  }
  return out;
}

void tensor_to_proto(const Tensor& t, onnx::TensorProto* out) {
  out->set_data_type(onnx_elem_type(t.dtype()));
  out->clear_dims();
  for (int64_t d : t.shape().dims) out->add_dims(d);
  out->set_raw_data(t.raw_data(), t.bytes());
}

StatusOr<OnnxFile> parse_onnx_model(std::string_view bytes, const std::string& name,
                                    const std::string& dir) {
  OnnxFile file;
  file.path = name;
  file.dir = dir;
  // An empty message parses (every field is optional): say what is wrong with the file.
  if (bytes.empty()) return Error{name + ": the file is empty, not an ONNX model"};
  if (bytes.size() >= kMaxMessageBytes || !parse_message(bytes, &file.model)) {
    return Error{name + ": not an ONNX model (the protobuf ModelProto does not parse)"};
  }
  for (const onnx::OperatorSetIdProto& o : file.model.opset_import()) {
    if (o.domain().empty() || o.domain() == "ai.onnx") file.opset = static_cast<int>(o.version());
  }
  return file;
}

StatusOr<OnnxFile> read_onnx_model(const std::string& path) {
  WEFT_ASSIGN_OR_RETURN(std::string bytes, read_bounded(path));
  fs::path dir = fs::path(path).parent_path();
  return parse_onnx_model(bytes, path, dir.empty() ? "." : dir.string());
}

StatusOr<Tensor> read_onnx_tensor(const std::string& path) {
  WEFT_ASSIGN_OR_RETURN(std::string bytes, read_bounded(path));
  onnx::TensorProto t;
  if (!parse_message(bytes, &t)) return Error{path + ": not an ONNX TensorProto"};
  StatusOr<Tensor> out = tensor_from_proto(t, "");
  if (!out.ok()) return Error{path + ": " + out.error().message};
  return out;
}

}  // namespace weft::onnx_io
