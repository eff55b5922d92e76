#include "runtime/collective/gloo_communicator.h"

#include <gloo/allreduce.h>
#include <gloo/broadcast.h>
#include <gloo/common/error.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/transport/tcp/device.h>
#include <unistd.h>

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <thread>

#include "runtime/collective/tcp_store.h"
#include "runtime/collective/watchdog.h"

namespace weft::collective {
namespace {

using ReduceFunction = void (*)(void*, const void*, const void*, size_t);

StatusOr<ReduceFunction> sum_of(DType dtype) {
  switch (dtype) {
    case DType::f32: return static_cast<ReduceFunction>(&gloo::sum<float>);
    case DType::f64: return static_cast<ReduceFunction>(&gloo::sum<double>);
    case DType::i32: return static_cast<ReduceFunction>(&gloo::sum<int32_t>);
    case DType::i64: return static_cast<ReduceFunction>(&gloo::sum<int64_t>);
    case DType::u8: return static_cast<ReduceFunction>(&gloo::sum<uint8_t>);
    default:
      return Error{"all_reduce over Gloo: dtype " + std::string(dtype_name(dtype)) +
                   " is not supported (f32, f64, i32, i64, u8); keep gradients in f32"};
  }
}

// gloo's message without its "[file:line] " prefix.
std::string gloo_reason(const std::string& what) {
  const size_t end = what.find("] ");
  return what.rfind('[', 0) == 0 && end != std::string::npos ? what.substr(end + 2) : what;
}

bool is_loopback(const std::string& host) {
  return host == "localhost" || host.rfind("127.", 0) == 0 || host == "::1";
}

// The address this rank's transport listens on (see the header).
gloo::transport::tcp::attr transport_address(const GlooOptions& o) {
  gloo::transport::tcp::attr a;
  if (!o.interface.empty()) {
    a.iface = o.interface;
  } else if (is_loopback(o.master_addr)) {
    a.hostname = "127.0.0.1";
  } else {
    char name[256] = {};
    ::gethostname(name, sizeof name - 1);
    a.hostname = name;
  }
  return a;
}

// Runs a rank's collectives one at a time, in the order they were submitted, on a thread
// of its own: a started reduction goes on while the caller computes (the caller only
// submits, then tests or waits), and every rank issues its collectives in the order it
// started them, the same on every rank. The destructor runs what is queued, then joins.
class CollectiveThread {
 public:
  CollectiveThread() : thread_([this] { loop(); }) {}
  ~CollectiveThread() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    ready_.notify_one();
    thread_.join();
  }
  CollectiveThread(const CollectiveThread&) = delete;
  CollectiveThread& operator=(const CollectiveThread&) = delete;

  /// Queues `job`; the future holds its status once it has run.
  std::future<Status> submit(std::function<Status()> job) {
    std::packaged_task<Status()> task(std::move(job));
    std::future<Status> done = task.get_future();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      queue_.push_back(std::move(task));
    }
    ready_.notify_one();
    return done;
  }

 private:
  void loop() {
    for (;;) {
      std::packaged_task<Status()> task;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        ready_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) return;
        task = std::move(queue_.front());
        queue_.pop_front();
      }
      task();
    }
  }

  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::packaged_task<Status()>> queue_;
  bool stopping_ = false;
  std::thread thread_;  // last: starts once the members above exist
};

// A reduction queued on the CollectiveThread.
class GlooPending : public PendingReduction {
 public:
  explicit GlooPending(std::future<Status> done) : done_(std::move(done)) {}
  Status wait() override { return done_.get(); }
  bool test() override { return done_.wait_for(std::chrono::seconds(0)) == std::future_status::ready; }

 private:
  std::future<Status> done_;
};

class GlooWorld : public Communicator {
 public:
  GlooWorld(const GlooOptions& options, std::unique_ptr<TcpStore> store, std::shared_ptr<gloo::Context> context)
      : options_(options), store_(std::move(store)), context_(std::move(context)) {}

  int rank() const override { return options_.rank; }
  int world_size() const override { return options_.world_size; }

  Status all_reduce(void* data, int64_t count, DType dtype, Reduction reduction) override {
    WEFT_ASSIGN_OR_RETURN(std::unique_ptr<PendingReduction> pending, start_all_reduce(data, count, dtype, reduction));
    return pending->wait();
  }

  // Non-blocking: the reduction runs on the collective thread (the dtype checked here).
  StatusOr<std::unique_ptr<PendingReduction>> start_all_reduce(void* data, int64_t count, DType dtype,
                                                               Reduction reduction) override {
    if (reduction == Reduction::mean && dtype != DType::f32 && dtype != DType::f64) {
      return Error{"all_reduce: the mean over Gloo needs f32 or f64 values, got " + std::string(dtype_name(dtype))};
    }
    WEFT_ASSIGN_OR_RETURN(ReduceFunction sum, sum_of(dtype));
    const std::string doing = begin_collective("all_reduce", count * dtype_size(dtype));
    const uint32_t tag = next_tag();
    std::future<Status> done =
        thread_.submit([=, this] { return reduce(data, count, dtype, reduction, sum, tag, doing); });
    return std::unique_ptr<PendingReduction>(std::make_unique<GlooPending>(std::move(done)));
  }

  Status broadcast(void* data, int64_t bytes, int root) override {
    if (root < 0 || root >= world_size()) {
      return Error{"broadcast: root rank " + std::to_string(root) + " outside the " +
                   std::to_string(world_size()) + " ranks"};
    }
    const std::string doing = begin_collective("broadcast", bytes);
    const uint32_t tag = next_tag();
    return thread_.submit([=, this] { return send_from(data, bytes, root, tag, doing); }).get();
  }

  std::string describe() const override {
    return "Gloo rank " + std::to_string(rank()) + " of " + std::to_string(world_size()) + " (TCP, rendezvous at " +
           options_.master_addr + ":" + std::to_string(options_.master_port) + ")";
  }

 private:
  uint32_t next_tag() { return tag_++; }

  // On the collective thread: gloo's ring allreduce, then the mean's division.
  Status reduce(void* data, int64_t count, DType dtype, Reduction reduction, ReduceFunction sum, uint32_t tag,
                const std::string& doing) {
    gloo::AllreduceOptions opts(context_);
    // Untyped: gloo's typed setters only record the element size.
    std::byte* bytes = static_cast<std::byte*>(data);
    switch (dtype_size(dtype)) {
      case 1: opts.setOutput(reinterpret_cast<uint8_t*>(bytes), count); break;
      case 4: opts.setOutput(reinterpret_cast<int32_t*>(bytes), count); break;
      default: opts.setOutput(reinterpret_cast<int64_t*>(bytes), count); break;
    }
    opts.setReduceFunction(sum);
    opts.setTag(tag);
    opts.setTimeout(options_.timeout);
    WEFT_RETURN_IF_ERROR(run(doing, [&] { gloo::allreduce(opts); }));
    if (reduction == Reduction::mean) divide_by_world_size(data, count, dtype, world_size());
    return Status();
  }

  // On the collective thread: gloo's broadcast from `root`.
  Status send_from(void* data, int64_t bytes, int root, uint32_t tag, const std::string& doing) {
    gloo::BroadcastOptions opts(context_);
    opts.setOutput(static_cast<uint8_t*>(data), static_cast<size_t>(bytes));
    opts.setRoot(root);
    opts.setTag(tag);
    opts.setTimeout(options_.timeout);
    return run(doing, [&] { gloo::broadcast(opts); });
  }

  // Runs one gloo collective; its exception becomes watchdog.h's line.
  template <typename F>
  Status run(const std::string& doing, F&& collective) {
    try {
      collective();
      return Status();
    } catch (const gloo::Exception& e) {
      const std::string what = e.what();
      const std::string happened =
          what.find("Timed out") != std::string::npos
              ? no_answer(rank(), world_size(), options_.timeout)
              : peer_of(rank(), world_size()) + " is gone (" + gloo_reason(what) + ")";
      return Error{collective_failure(rank(), world_size(), "Gloo", doing, happened)};
    }
  }

  GlooOptions options_;
  std::unique_ptr<TcpStore> store_;  // served by rank 0 until the job ends
  std::shared_ptr<gloo::Context> context_;
  uint32_t tag_ = 0;
  CollectiveThread thread_;  // last: joined before the context and the store go
};

}  // namespace

StatusOr<std::shared_ptr<Communicator>> gloo_world(const GlooOptions& options) {
  try {
    auto store = std::make_unique<TcpStore>(TcpStoreOptions{.host = options.master_addr,
                                                            .port = options.master_port,
                                                            .serve = options.rank == 0,
                                                            .timeout = options.timeout});
    std::shared_ptr<gloo::transport::Device> device = gloo::transport::tcp::CreateDevice(transport_address(options));
    auto context = std::make_shared<gloo::rendezvous::Context>(options.rank, options.world_size);
    context->setTimeout(options.timeout);
    context->connectFullMesh(*store, device);
    return std::shared_ptr<Communicator>(std::make_shared<GlooWorld>(options, std::move(store), std::move(context)));
  } catch (const gloo::Exception& e) {
    return Error{"data parallelism over Gloo: rank " + std::to_string(options.rank) + " of " +
                 std::to_string(options.world_size) + " could not join: " + gloo_reason(e.what())};
  }
}

}  // namespace weft::collective
