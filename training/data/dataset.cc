#include "training/data/dataset.h"

#include <algorithm>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <sstream>
#include <string_view>
#include <unordered_map>

#include "ir/text_util.h"
#include "training/data/idx.h"
#include "formats/npy.h"
#include "runtime/philox.h"
#include "formats/safetensors.h"

namespace weft {
namespace {

Error file_error(const std::string& file, std::string message) {
  return Error{std::move(message), Location::of_file(file)};
}

StatusOr<Column> batched(Tensor array, std::string file, std::string name) {
  if (array.rank() < 1) {
    return file_error(file, "holds a scalar " + array.type().to_string() + "; dimension 0 must be the sample");
  }
  return Column{std::move(array), std::move(file), std::move(name)};
}

std::string trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return std::string(s);
}

// A line's fields, trimmed. A field in double quotes (RFC 4180, as R's write.csv and
// spreadsheets write headers: "label") is its text between them, with "" for a quote and
// commas inside it kept; a quote that does not close on the line leaves the field as
// written.
std::vector<std::string> split_fields(const std::string& line) {
  auto until = [&](size_t from, size_t end) {  // line[from, end), end may be npos
    return trim(std::string_view(line).substr(from, end == std::string::npos ? end : end - from));
  };
  std::vector<std::string> out;
  for (size_t at = 0;;) {
    size_t next = line.find(',', at);
    std::string field = until(at, next);
    if (field.starts_with('"')) {
      std::string text;
      size_t k = line.find('"', at) + 1;
      for (; k < line.size() && (line[k] != '"' || (k + 1 < line.size() && line[k + 1] == '"')); ++k) {
        text += line[k];
        if (line[k] == '"') ++k;  // "" is one quote
      }
      const size_t after = k < line.size() ? line.find(',', k) : std::string::npos;
      if (k < line.size() && until(k + 1, after).empty()) {  // closed, nothing but blanks after
        field = std::move(text);
        next = after;
      }
    }
    out.push_back(std::move(field));
    if (next == std::string::npos) return out;
    at = next + 1;
  }
}

// A CSV field as a number: what std::from_chars reads, and a leading '+' ("+1.5", which
// Python's float() and NumPy take).
bool parse_number(const std::string& f, double& v) {
  std::string_view text = f;
  if (text.size() > 1 && text[0] == '+' && text[1] != '-' && text[1] != '+') text.remove_prefix(1);
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  return !text.empty() && ec == std::errc() && end == text.data() + text.size();
}

}  // namespace

std::string Column::where() const { return name.empty() ? file : file + ", column '" + name + "'"; }

std::string Column::row(int64_t i) const {
  if (i >= 0 && i < static_cast<int64_t>(lines.size())) {
    return "line " + std::to_string(lines[i]) + " (sample " + std::to_string(i) + ")";
  }
  return "row " + std::to_string(i);
}

StatusOr<Column> idx_column(const std::string& path) {
  WEFT_ASSIGN_OR_RETURN(Tensor t, read_idx(path));
  return batched(std::move(t), path, "");
}

StatusOr<Column> npy_column(const std::string& path) {
  WEFT_ASSIGN_OR_RETURN(Tensor t, read_npy(path));
  return batched(std::move(t), path, "");
}

StatusOr<Column> safetensors_column(const std::string& path, const std::string& tensor) {
  WEFT_ASSIGN_OR_RETURN(SafetensorsFile f, read_safetensors(path));
  const Tensor* t = f.find(tensor);
  if (t == nullptr) {
    std::string names;
    for (const auto& [name, value] : f.tensors) names += (names.empty() ? "'" : ", '") + name + "'";
    return file_error(path, "has no tensor '" + tensor + "'; it holds " + (names.empty() ? "none" : names));
  }
  return batched(*t, path, tensor);
}

// A line that is not text (a control character other than tab and carriage return, or
// bytes that are not UTF-8: a compressed or binary file given as the CSV) is named by its
// first such byte; echoing it printed raw binary into the error, cut short at its first
// NUL or newline.
Status check_text(const std::string& path, const std::string& line, int64_t line_number) {
  size_t at = std::find_if(line.begin(), line.end(), [](char c) {
                return static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\r';
              }) - line.begin();
  if (at == line.size()) at = std::string::npos;
  if (std::optional<size_t> bad = find_invalid_utf8(line); bad && *bad < at) at = *bad;
  if (at == std::string::npos) return Status();
  char hex[8];
  std::snprintf(hex, sizeof(hex), "0x%02X", static_cast<unsigned char>(line[at]));
  return Error{"line " + std::to_string(line_number) + " is not text: byte " + std::to_string(at + 1) +
                   " is " + hex + " (a compressed or binary file?); a CSV file is UTF-8 text",
               Location{.file = path, .line = static_cast<int>(std::min<int64_t>(line_number, INT_MAX)),
                        .col = 0, .path = {}}};
}

StatusOr<std::vector<Column>> csv_columns(const std::string& path,
                                          const std::vector<std::vector<std::string>>& groups) {
  std::error_code unused;
  if (std::filesystem::is_directory(path, unused)) {
    return file_error(path, "is a directory; give the path of a CSV file");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return file_error(path, "cannot be opened: " + std::string(std::strerror(errno)));
  std::string line;
  if (!std::getline(in, line)) return file_error(path, "is empty; a CSV file starts with a header row");
  // Spreadsheets save "UTF-8 CSV" with a byte order mark, which would end up in the first
  // column's name.
  if (line.starts_with("\xEF\xBB\xBF")) line.erase(0, 3);
  WEFT_RETURN_IF_ERROR(check_text(path, line, 1));
  const std::vector<std::string> header = split_fields(line);
  std::unordered_map<std::string_view, size_t> field_of;  // a name's first field
  for (size_t c = 0; c < header.size(); ++c) {
    if (header[c].empty()) continue;  // unnamed columns cannot be picked
    const auto [first, fresh] = field_of.emplace(header[c], c);
    if (!fresh) {
      return Error{"the header (line 1) names the column '" + header[c] + "' twice, as fields " +
                       std::to_string(first->second + 1) + " and " + std::to_string(c + 1) +
                       "; rename or remove one (CSV readers keep either)",
                   Location{.file = path, .line = 1, .col = static_cast<int>(c + 1), .path = {}}};
    }
  }
  std::vector<std::vector<int>> picks(groups.size());  // header index of each group member
  for (size_t g = 0; g < groups.size(); ++g) {
    if (groups[g].empty()) return file_error(path, "column group " + std::to_string(g) + " names no columns");
    for (const std::string& name : groups[g]) {
      const auto found = field_of.find(name);
      if (found == field_of.end()) {
        std::string names;
        for (const std::string& h : header) names += (names.empty() ? "'" : ", '") + h + "'";
        return file_error(path, "has no column '" + name + "'; its header (line 1) names " + names);
      }
      picks[g].push_back(static_cast<int>(found->second));
    }
  }
  std::vector<std::vector<double>> values(groups.size());
  std::vector<int64_t> lines;  // the line of each sample
  int64_t line_number = 1;
  while (std::getline(in, line)) {
    ++line_number;
    WEFT_RETURN_IF_ERROR(check_text(path, line, line_number));
    if (trim(line).empty()) continue;  // a trailing newline, blank lines
    const std::vector<std::string> fields = split_fields(line);
    const Location at{.file = path, .line = static_cast<int>(std::min<int64_t>(line_number, INT_MAX)),
                      .col = 0, .path = {}};
    if (fields.size() != header.size()) {
      return Error{"line " + std::to_string(line_number) + " has " + std::to_string(fields.size()) +
                       " fields; the header (line 1) has " + std::to_string(header.size()),
                   at};
    }
    for (size_t g = 0; g < groups.size(); ++g) {
      for (int c : picks[g]) {
        const std::string& f = fields[c];
        double v = 0;
        if (!parse_number(f, v)) {
          Location field = at;
          field.col = c + 1;  // the field's index, 1-based
          return Error{"line " + std::to_string(line_number) + ", column '" + header[c] + "': '" + f +
                           "' is not a number",
                       field};
        }
        values[g].push_back(v);
      }
    }
    lines.push_back(line_number);
  }
  const auto rows = static_cast<int64_t>(lines.size());
  std::vector<Column> out;
  for (size_t g = 0; g < groups.size(); ++g) {
    const int64_t width = static_cast<int64_t>(groups[g].size());
    Shape shape = width == 1 ? Shape{rows} : Shape{rows, width};
    bool integers = true;
    for (double v : values[g]) integers = integers && v == std::floor(v) && std::abs(v) < 0x1p53;
    Tensor t(Type{integers ? DType::i64 : DType::f64, shape});
    if (integers) {
      for (size_t i = 0; i < values[g].size(); ++i) t.data<int64_t>()[i] = static_cast<int64_t>(values[g][i]);
    } else if (!values[g].empty()) {
      std::memcpy(t.raw_data(), values[g].data(), t.bytes());
    }
    std::string name;
    for (const std::string& n : groups[g]) name += (name.empty() ? "" : ",") + n;
    out.push_back(Column{std::move(t), path, std::move(name)});
    out.back().lines = lines;
  }
  return out;
}

StatusOr<Column> source_column(const std::string& spec) {
  const size_t colon = spec.rfind(':');
  const std::string file = spec.substr(0, colon), what = colon == std::string::npos ? "" : spec.substr(colon + 1);
  auto ends_with = [&](std::string_view suffix) {
    return file.size() >= suffix.size() && file.compare(file.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  if (colon != std::string::npos && ends_with(".safetensors")) return safetensors_column(file, what);
  if (colon != std::string::npos && ends_with(".csv")) {
    std::vector<std::string> names;
    std::stringstream in(what);
    for (std::string name; std::getline(in, name, '+');) names.push_back(name);
    if (what.ends_with('+')) names.emplace_back();  // `a+` names an empty column, as `a++b` does
    WEFT_ASSIGN_OR_RETURN(std::vector<Column> columns, csv_columns(file, {names}));
    return std::move(columns[0]);
  }
  if (ends_with(".safetensors") || ends_with(".csv")) {
    return file_error(spec, "names no " + std::string(ends_with(".csv") ? "columns" : "tensor") +
                                ": write FILE.safetensors:TENSOR or FILE.csv:COLUMN[+COLUMN...]");
  }
  if (ends_with(".idx") || ends_with("-ubyte") || ends_with("-ubyte.gz")) return idx_column(spec);
  return npy_column(spec);
}

Status check_same_length(const std::vector<Column>& columns) {
  for (const Column& c : columns) {
    if (c.size() != columns[0].size()) {
      return file_error(c.file, (c.name.empty() ? "" : "column '" + c.name + "' ") + "holds " +
                                    std::to_string(c.size()) + " samples; " + columns[0].where() + " holds " +
                                    std::to_string(columns[0].size()) +
                                    ": the sources of one data set must hold as many samples each");
    }
  }
  return Status();
}

Status check_class_labels(const Column& labels, int64_t classes) {
  if (labels.array.rank() != 1) {
    return file_error(labels.file, labels.where() + " holds " + labels.array.type().to_string() +
                                       "; class labels are one value per sample");
  }
  for (int64_t i = 0; i < labels.size(); ++i) {
    const double v = labels.normalization.apply(labels.array.get_double(i));
    if (v != std::floor(v) || v < 0 || v >= static_cast<double>(classes)) {
      std::ostringstream value;
      value << v;
      return file_error(labels.file, labels.where() + ", " + labels.row(i) + ": the label " + value.str() +
                                         " is not a class index in [0, " + std::to_string(classes) + ")");
    }
  }
  return Status();
}

int64_t BatchPlan::num_batches() const {
  if (batch <= 0) return 0;
  return last == LastBatch::drop ? samples / batch : (samples + batch - 1) / batch;
}

int64_t BatchPlan::rows_in(int64_t index) const {
  WEFT_CHECK(index >= 0 && index < num_batches(), "BatchPlan::rows_in: batch index out of range");
  return std::min(batch, samples - index * batch);
}

std::vector<int64_t> epoch_order(uint64_t seed, int64_t epoch, int64_t n) {
  WEFT_CHECK(epoch >= 0 && n >= 0, "epoch_order: negative epoch or size");
  std::vector<int64_t> out(static_cast<size_t>(n));
  std::iota(out.begin(), out.end(), int64_t{0});
  for (int64_t i = n - 1; i > 0; --i) {
    const philox::Block b = philox::element_block(static_cast<int64_t>(seed), epoch, static_cast<uint64_t>(i));
    const uint64_t r = (static_cast<uint64_t>(b.v[0]) << 32) | b.v[1];
    std::swap(out[i], out[r % static_cast<uint64_t>(i + 1)]);
  }
  return out;
}

RankShare rank_share(int64_t count, int rank, int world) {
  WEFT_CHECK(world >= 1 && rank >= 0 && rank < world && count >= 0 && count % world == 0,
             "rank_share: rank, world or a count that is not a multiple of world");
  const int64_t size = count / world;
  return {rank * size, size};
}

std::vector<int64_t> rank_epoch_rows(uint64_t seed, int64_t epoch, int64_t samples, int64_t global_batch,
                                     int rank, int world) {
  WEFT_CHECK(global_batch >= 1, "rank_epoch_rows: a global batch of no samples");
  const std::vector<int64_t> order = epoch_order(seed, epoch, samples);
  const RankShare share = rank_share(global_batch, rank, world);
  const int64_t batches = samples / global_batch;  // the remainder is not visited this epoch
  std::vector<int64_t> rows;
  rows.reserve(static_cast<size_t>(batches * share.size));
  for (int64_t b = 0; b < batches; ++b) {
    const auto first = order.begin() + b * global_batch + share.offset;
    rows.insert(rows.end(), first, first + share.size);
  }
  return rows;
}

void gather_batch(const std::vector<Column>& columns, const int64_t* rows, int64_t count, int rank,
                  int world, std::vector<Tensor>& into) {
  WEFT_CHECK(into.size() == columns.size(), "gather_batch: the number of tensors");
  const RankShare share = rank_share(count, rank, world);
  for (size_t k = 0; k < columns.size(); ++k) {
    gather_rows_into(columns[k], rows + share.offset, share.size, into[k]);
  }
}

void gather_rows_into(const Column& column, const int64_t* rows, int64_t count, Tensor& out) {
  gather_rows_into(column.array, rows, count, out, column.normalization);
}

void gather_rows_into(const Tensor& a, const int64_t* rows, int64_t count, Tensor& out,
                      const Column::Normalization& normalization) {
  const int64_t width = a.shape()[0] == 0 ? 0 : a.numel() / a.shape()[0];
  WEFT_CHECK(out.rank() >= 1 && count <= out.shape()[0] && out.numel() == out.shape()[0] * width,
             "gather_rows_into: rows of " + a.type().to_string() + " into " + out.type().to_string());
  const bool identity = normalization.identity();
  if (identity && a.dtype() == out.dtype()) {
    const size_t row_bytes = static_cast<size_t>(width) * dtype_size(a.dtype());
    const auto* src = static_cast<const std::byte*>(a.raw_data());
    auto* dst = static_cast<std::byte*>(out.raw_data());
    for (int64_t i = 0; i < count; ++i) {
      WEFT_CHECK(rows[i] >= 0 && rows[i] < a.shape()[0], "gather_rows_into: row out of range");
      std::memcpy(dst + i * row_bytes, src + rows[i] * row_bytes, row_bytes);
    }
  } else if (a.dtype() == DType::u8 && out.dtype() == DType::f32) {
    // IDX images: a table of the 256 values, computed in f32 as torchvision does.
    const auto divisor = static_cast<float>(normalization.divisor);
    const auto mean = static_cast<float>(normalization.mean), std = static_cast<float>(normalization.std);
    float table[256];
    for (int b = 0; b < 256; ++b) table[b] = (static_cast<float>(b) / divisor - mean) / std;
    const uint8_t* src = a.data<uint8_t>();
    float* dst = out.data<float>();
    for (int64_t i = 0; i < count; ++i) {
      WEFT_CHECK(rows[i] >= 0 && rows[i] < a.shape()[0], "gather_rows_into: row out of range");
      for (int64_t e = 0; e < width; ++e) dst[i * width + e] = table[src[rows[i] * width + e]];
    }
  } else {
    for (int64_t i = 0; i < count; ++i) {
      WEFT_CHECK(rows[i] >= 0 && rows[i] < a.shape()[0], "gather_rows_into: row out of range");
      for (int64_t e = 0; e < width; ++e) {
        const double v = a.get_double(rows[i] * width + e);
        out.set_double(i * width + e, identity ? v : normalization.apply(v));
      }
    }
  }
  if (count < out.shape()[0]) {
    auto* dst = static_cast<std::byte*>(out.raw_data());
    const size_t row_bytes = static_cast<size_t>(width) * dtype_size(out.dtype());
    std::memset(dst + count * row_bytes, 0, (out.shape()[0] - count) * row_bytes);
  }
}

}  // namespace weft
