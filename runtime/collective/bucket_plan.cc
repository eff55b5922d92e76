#include "runtime/collective/bucket_plan.h"

#include <algorithm>
#include <map>
#include <string>
#include <utility>

namespace weft::collective {
namespace {

// The bytes a BufferRef covers, in its space: arena offsets, or offsets into the inputs
// block (a flat range runs on through the inputs laid out after its first).
struct ByteRange {
  Space space;
  int64_t begin;
  int64_t end;
  bool overlaps(const ByteRange& o) const { return space == o.space && begin < o.end && o.begin < end; }
};

class Ranges {
 public:
  explicit Ranges(const Program& program) : offsets_(program.input_offsets) {
    if (offsets_.empty()) {
      Program layout;
      layout.inputs = program.inputs;
      lay_out_inputs_in_order(layout);
      offsets_ = layout.input_offsets;
    }
  }
  ByteRange of(const BufferRef& r) const {
    const int64_t begin =
        r.space == Space::arena ? r.offset : offsets_[static_cast<size_t>(r.input)];
    return {r.space, begin, begin + static_cast<int64_t>(r.type.bytes())};
  }

 private:
  std::vector<int64_t> offsets_;
};

bool is_all_reduce(const Invocation& inv) {
  return inv.kind == Invocation::Kind::library && inv.node.op == Op::AllReduce;
}

// Whether invocation `inv` reads or writes the bytes of `r`.
bool touches(const Ranges& ranges, const Invocation& inv, const ByteRange& r) {
  for (const auto* refs : {&inv.operands, &inv.results}) {
    for (const BufferRef& x : *refs) {
      if (ranges.of(x).overlaps(r)) return true;
    }
  }
  return false;
}

bool touches_bucket(const Ranges& ranges, const Invocation& inv, const Bucket& b) {
  for (const BucketMember& m : b.members) {
    if (touches(ranges, inv, ranges.of(m.result))) return true;
  }
  return false;
}

// Whether anything after invocation `i` reads `result`'s bytes: a later invocation, an
// output of the program, or an update's value.
bool read_after(const Program& program, const Ranges& ranges, size_t i, const BufferRef& result) {
  const ByteRange r = ranges.of(result);
  for (size_t j = i + 1; j < program.code.size(); ++j) {
    for (const BufferRef& x : program.code[j].operands) {
      if (ranges.of(x).overlaps(r)) return true;
    }
  }
  for (const BufferRef& x : program.outputs) {
    if (ranges.of(x).overlaps(r)) return true;
  }
  for (const Update& u : program.updates) {
    if (ranges.of(u.from).overlaps(r)) return true;
  }
  return false;
}

// The predicate of an all_reduce invocation, if it has one.
std::optional<BufferRef> predicate_of(const Invocation& inv) {
  if (inv.operands.size() < 2) return std::nullopt;
  return inv.operands[1];
}

// What members of one bucket share: dtype and reduction (and at most one predicate).
using Key = std::pair<DType, Reduction>;

bool same_buffer(const BufferRef& a, const BufferRef& b) {
  return a.space == b.space && a.input == b.input && a.offset == b.offset;
}

// Whether a member with `predicate` may join bucket `b`: unpredicated members join any,
// predicated ones a bucket with no predicate yet or the same one.
bool may_join(const Bucket& b, const std::optional<BufferRef>& predicate) {
  return !predicate || !b.predicate || same_buffer(*predicate, *b.predicate);
}

// The all_reduce invocations whose results one later concat reads together with another
// all_reduce's (each operand's last writer before the concat): the row blocks of one
// gradient (passes/split_gradients.h), each of which closes its bucket so that its
// reduction starts before the next block is computed.
std::vector<bool> split_blocks(const Program& program, const Ranges& ranges) {
  std::vector<bool> blocks(program.code.size(), false);
  for (size_t j = 0; j < program.code.size(); ++j) {
    const Invocation& concat = program.code[j];
    if (concat.kind != Invocation::Kind::library || concat.node.op != Op::Concat) continue;
    std::vector<size_t> reduced;
    for (const BufferRef& x : concat.operands) {
      for (size_t i = j; i-- > 0;) {
        const Invocation& writer = program.code[i];
        const bool writes = std::any_of(writer.results.begin(), writer.results.end(),
                                        [&](const BufferRef& r) { return ranges.of(r).overlaps(ranges.of(x)); });
        if (!writes) continue;
        if (is_all_reduce(writer) && same_buffer(writer.results[0], x)) reduced.push_back(i);
        break;
      }
    }
    if (reduced.size() < 2) continue;
    for (size_t i : reduced) blocks[i] = true;
  }
  return blocks;
}

// Builds the buckets in program order: the open bucket of each kind (dtype, reduction;
// an index into `plan.buckets`) takes the next all_reduce of its kind until it closes.
class Planner {
 public:
  Planner(const Program& program, const BucketPlanOptions& options)
      : program_(program), options_(options), ranges_(program), split_blocks_(split_blocks(program, ranges_)) {
    plan_.bucket_of.assign(program.code.size(), -1);
  }

  StatusOr<BucketPlan> run() {
    for (size_t i = 0; i < program_.code.size(); ++i) {
      close_touched(i);
      const Invocation& inv = program_.code[i];
      if (!is_all_reduce(inv) || !read_after(program_, ranges_, i, inv.results[0])) continue;
      WEFT_ASSIGN_OR_RETURN(Reduction reduction, parse_reduction(inv.node.str_attr("reduction")));
      add_member(i, reduction);
    }
    order_by_start();
    place_unpredicated_first();
    place_waits();
    lay_out_staging();
    return std::move(plan_);
  }

 private:
  // Closes the open buckets that invocation `i` reads or writes a result of.
  void close_touched(size_t i) {
    for (auto it = open_.begin(); it != open_.end();) {
      const bool touched = touches_bucket(ranges_, program_.code[i], plan_.buckets[it->second]);
      it = touched ? open_.erase(it) : std::next(it);
    }
  }

  void add_member(size_t i, Reduction reduction) {
    const Invocation& inv = program_.code[i];
    const Type& type = inv.results[0].type;
    const std::optional<BufferRef> predicate = predicate_of(inv);
    const Key key{type.dtype, reduction};
    auto open = open_.find(key);
    if (open != open_.end() && !may_join(plan_.buckets[open->second], predicate)) {
      open_.erase(open);
      open = open_.end();
    }
    if (open == open_.end()) {
      Bucket fresh;
      fresh.dtype = type.dtype;
      fresh.reduction = reduction;
      plan_.buckets.push_back(std::move(fresh));
      open = open_.emplace(key, plan_.buckets.size() - 1).first;
      ++opened_[key];
    }
    Bucket& b = plan_.buckets[open->second];
    if (predicate) b.predicate = predicate;
    b.members.push_back({i, inv.operands[0], inv.results[0], b.count, type.numel(), predicate.has_value()});
    b.count += type.numel();
    if (!predicate) b.always_count += type.numel();
    b.start_after = i;
    plan_.bucket_of[i] = static_cast<int>(open->second);
    const bool first = opened_[key] == 1;
    const int64_t limit = first ? std::min(options_.first_bucket_bytes, options_.bucket_bytes) : options_.bucket_bytes;
    if (b.bytes() >= limit || split_blocks_[i]) open_.erase(open);
  }

  // Buckets of different kinds interleave: number them in the order they start.
  void order_by_start() {
    std::stable_sort(plan_.buckets.begin(), plan_.buckets.end(),
                     [](const Bucket& a, const Bucket& b) { return a.start_after < b.start_after; });
    for (size_t k = 0; k < plan_.buckets.size(); ++k) {
      for (const BucketMember& m : plan_.buckets[k].members) plan_.bucket_of[m.invocation] = static_cast<int>(k);
    }
  }

  // The unpredicated members' elements first in each slice (in program order), so that
  // a bucket whose predicate is false reduces one prefix of it.
  void place_unpredicated_first() {
    for (Bucket& b : plan_.buckets) {
      int64_t always = 0, predicated = b.always_count;
      for (BucketMember& m : b.members) {
        int64_t& next = m.predicated ? predicated : always;
        m.offset = next;
        next += m.count;
      }
    }
  }

  void place_waits() {
    for (Bucket& b : plan_.buckets) {
      b.wait_before = program_.code.size();
      for (size_t j = b.start_after + 1; j < program_.code.size(); ++j) {
        if (touches_bucket(ranges_, program_.code[j], b)) {
          b.wait_before = j;
          break;
        }
      }
    }
  }

  void lay_out_staging() {
    for (Bucket& b : plan_.buckets) {
      b.staging_offset = plan_.staging_bytes;
      plan_.staging_bytes += (b.bytes() + 63) / 64 * 64;
    }
  }

  const Program& program_;
  const BucketPlanOptions& options_;
  Ranges ranges_;
  std::vector<bool> split_blocks_;  ///< By invocation: a row block of a split gradient.
  BucketPlan plan_;
  std::map<Key, size_t> open_;   ///< The open bucket of each kind.
  std::map<Key, int> opened_;    ///< Buckets opened so far of each kind (1: the first is open).
};

}  // namespace

StatusOr<BucketPlan> plan_buckets(const Program& program, const BucketPlanOptions& options) {
  return Planner(program, options).run();
}

std::string describe(const BucketPlan& plan) {
  std::string out;
  for (size_t k = 0; k < plan.buckets.size(); ++k) {
    const Bucket& b = plan.buckets[k];
    out += "bucket " + std::to_string(k) + ": " + std::to_string(b.members.size()) + " " +
           std::string(dtype_name(b.dtype)) + " " + reduction_name(b.reduction) + " (" +
           std::to_string(b.count) + " elements" + (b.predicate ? " if " + b.predicate->to_string() : "") +
           (b.predicate && b.always_count > 0 ? ", " + std::to_string(b.always_count) + " always" : "") +
           ") start after " + std::to_string(b.start_after) +
           ", wait before " + std::to_string(b.wait_before) + "\n";
  }
  return out;
}

}  // namespace weft::collective
