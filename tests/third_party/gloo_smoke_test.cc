// Gloo (//third_party:gloo, torchrun-style collectives: runtime/collective/gloo_communicator.h):
// a world of one rank meets over an in-process store on loopback and all-reduces a buffer,
// which one rank leaves as it is.
#include <gloo/allreduce.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/hash_store.h>
#include <gloo/transport/tcp/device.h>

#include <gtest/gtest.h>

#include <memory>
#include <vector>

TEST(GlooSmoke, AWorldOfOneAllReducesOnLoopback) {
  gloo::transport::tcp::attr address;
  address.hostname = "127.0.0.1";
  std::shared_ptr<gloo::transport::Device> device = gloo::transport::tcp::CreateDevice(address);
  gloo::rendezvous::HashStore store;
  auto context = std::make_shared<gloo::rendezvous::Context>(/*rank=*/0, /*size=*/1);
  context->connectFullMesh(store, device);
  std::vector<float> x = {1.5f, -2.0f, 3.25f};
  gloo::AllreduceOptions options(context);
  options.setOutput(x.data(), x.size());
  using ReduceFunction = void (*)(void*, const void*, const void*, size_t);
  options.setReduceFunction(static_cast<ReduceFunction>(&gloo::sum<float>));
  gloo::allreduce(options);
  EXPECT_EQ(x, (std::vector<float>{1.5f, -2.0f, 3.25f}));
}
