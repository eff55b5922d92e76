// runtime/binding.h: what every executor's binding shares.
#include "runtime/binding.h"

#include <gtest/gtest.h>

namespace weft {
namespace {

TEST(CheckMemory, RefusesAPlanLargerThanTheLimit) {
  Program p;
  p.name = "step";
  p.inputs = {{"x", Type{DType::f32, {256, 256}}, InputKind::data},
              {"w", Type{DType::f32, {256}}, InputKind::param}};
  lay_out_inputs_in_order(p);
  p.arena_bytes = 1 << 20;
  Invocation inv;
  inv.kind = Invocation::Kind::copy;
  inv.node.op = Op::Reshape;
  inv.operands = {{Space::input, 0, 0, p.inputs[0].type}};
  inv.results = {{Space::arena, -1, 4096, Type{DType::f32, {512, 256}}}};
  inv.label = "h";
  p.code = {inv};
  EXPECT_TRUE(check_memory(p, int64_t{1} << 30, "the memory limit").ok());
  Status s = check_memory(p, 1, "the memory limit");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message,
            "program @step needs 1.3 MiB (arena 1.0 MiB + inputs 257.0 KiB) but only 1 B are "
            "available (the memory limit); largest buffers: %h f32[512,256] (arena+4096) 512.0 "
            "KiB, %x f32[256,256] (input) 256.0 KiB, %w f32[256] (input) 1.0 KiB; raise the limit "
            "(--max-memory, max_memory) or use a smaller batch");
}

// An invocation with several results (a loop: its carries, then its stacked ys) is
// labelled by its first; the stacked ys of `%h, %ys = scan(...)` were reported as "%h".
TEST(CheckMemory, NamesALaterResultByItsPlace) {
  Program p;
  p.name = "g";
  p.arena_bytes = int64_t{1} << 44;
  Invocation inv;
  inv.kind = Invocation::Kind::loop;
  inv.results = {{Space::arena, -1, 0, Type{DType::f32, {4}}},
                 {Space::arena, -1, 64, Type{DType::f32, {int64_t{1} << 40, 4}}}};
  inv.label = "h";
  p.code = {inv};
  Status s = check_memory(p, 1 << 30, "MemAvailable");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message,
            "program @g needs 16384.0 GiB (arena 16384.0 GiB + inputs 0 B) but only 1.0 GiB are available "
            "(MemAvailable); largest buffers: result 1 of %h f32[1099511627776,4] (arena+64) 16384.0 GiB, "
            "%h f32[4] (arena+0) 16 B; use a smaller batch");
}

TEST(CheckMemory, CountsInputsBackToBackBeforeTheyAreLaidOut) {
  Program p;
  p.name = "step";
  p.inputs = {{"x", Type{DType::f32, {256, 256}}, InputKind::data},
              {"w", Type{DType::f32, {3}}, InputKind::param}};
  p.arena_bytes = 1 << 20;
  Status s = check_memory(p, 1, "MemAvailable");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message,
            "program @step needs 1.3 MiB (arena 1.0 MiB + inputs 256.0 KiB) but only 1 B are "
            "available (MemAvailable); largest buffers: %x f32[256,256] (input) 256.0 KiB, %w "
            "f32[3] (input) 12 B; use a smaller batch");
  EXPECT_TRUE(check_memory(p, -1, "MemAvailable").ok());  // unknown: not checked
}

TEST(ResolveBuffers, KernelAndEpilogueArgumentOrders) {
  Invocation inv;
  const Type t{DType::f32, {4}};
  inv.operands = {{Space::input, 0, 0, t}, {Space::input, 1, 0, t}, {Space::arena, -1, 0, t}};
  inv.results = {{Space::arena, -1, 64, t}, {Space::arena, -1, 128, t}};
  inv.clear = {{Space::arena, -1, 192, t}};
  std::byte arena[256];
  std::byte in0[16], in1[16];
  InvocationBuffers b = resolve_buffers(inv, [&](const BufferRef& r) -> void* {
    if (r.space == Space::input) return r.input == 0 ? in0 : in1;
    return arena + r.offset;
  });
  ASSERT_EQ(b.in.size(), 3u);
  EXPECT_EQ(b.in[0], in0);
  EXPECT_EQ(b.types[2], t);
  EXPECT_EQ(b.out(), arena + 64);
  EXPECT_EQ(b.kernel_args(), (std::vector<void*>{in0, in1, arena, arena + 64, arena + 128}));
  // C is result 1: C, the operands after A and B, then the other results.
  EXPECT_EQ(b.epilogue_args(1), (std::vector<void*>{arena + 128, arena, arena + 64}));
  ASSERT_EQ(b.clear.size(), 1u);
  EXPECT_EQ(b.clear[0], (std::pair<void*, size_t>{arena + 192, 16}));
}

TEST(ArenaFreeRuns, TheLongestRunNoLiveValueOccupies) {
  // 0 writes A [0,100); 1 reads A, writes B [100,200); 2 reads B, writes C [0,50), the
  // output; 3 writes D [250,300) over nothing live and reads C.
  Program p;
  p.arena_bytes = 300;
  auto ref = [](int64_t offset, int64_t floats) {
    return BufferRef{Space::arena, -1, offset, Type{DType::f32, {floats / 4}}};
  };
  Invocation a, b, c, d;
  a.results = {ref(0, 100)};
  b.operands = {ref(0, 100)};
  b.results = {ref(100, 100)};
  c.operands = {ref(100, 100)};
  c.results = {ref(0, 48)};
  d.operands = {ref(0, 48)};
  d.results = {ref(252, 48)};
  p.code = {a, b, c, d};
  p.outputs = {ref(0, 48)};
  const std::vector<ArenaRun> runs = arena_free_runs(p);
  ASSERT_EQ(runs.size(), 4u);
  EXPECT_EQ(runs[0].offset, 100);  // A alone
  EXPECT_EQ(runs[0].bytes, 200);
  EXPECT_EQ(runs[1].offset, 200);  // A and B
  EXPECT_EQ(runs[1].bytes, 100);
  EXPECT_EQ(runs[2].offset, 200);  // B and C: [48,100) is shorter than [200,300)
  EXPECT_EQ(runs[2].bytes, 100);
  EXPECT_EQ(runs[3].offset, 48);   // C and D: B is dead, [48,252)
  EXPECT_EQ(runs[3].bytes, 204);
}

TEST(SnapshotLayout, OneAlignedSlotPerUpdateFromAnInput) {
  Program p;
  const Type t{DType::f32, {3}};
  p.updates = {{0, {Space::input, 1, 0, t}},
               {1, {Space::arena, -1, 0, t}},
               {2, {Space::input, 0, 0, t}}};
  int64_t total = 0;
  EXPECT_EQ(snapshot_layout(p, 64, &total), (std::vector<int64_t>{0, 64}));
  EXPECT_EQ(total, 128);
}

}  // namespace
}  // namespace weft
