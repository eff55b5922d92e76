// Metrics: batch values to epoch means, trend queries on hand-made series with exact
// answers, group queries over dotted prefixes, the epoch CSV, and the errors.
#include "training/monitor/metrics.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

namespace weft::monitor {
namespace {

/// One epoch value per entry of `values` for `name` (each recorded as two batch values
/// around it, so flush's mean is exercised).
void epochs_of(Metrics& m, const std::string& name, const std::vector<double>& values) {
  for (double v : values) {
    m.record(name, v - 1);
    m.record(name, v + 1);
    ASSERT_TRUE(m.flush().ok());
  }
}

TEST(Metrics, FlushAveragesTheBatchValues) {
  Metrics m;
  m.record("loss", 1);
  m.record("loss", 2);
  m.record("loss", 6);
  EXPECT_EQ(*m.current("loss"), 3);
  ASSERT_TRUE(m.flush().ok());
  m.record("acc", 0.5);  // appears in epoch 2 only
  ASSERT_TRUE(m.flush().ok());
  EXPECT_EQ(*m.history("loss"), (std::vector<std::pair<int64_t, double>>{{1, 3}}));
  EXPECT_EQ(*m.history("acc"), (std::vector<std::pair<int64_t, double>>{{2, 0.5}}));
  EXPECT_EQ(m.epochs(), 2);
  EXPECT_EQ(m.names(), (std::vector<std::string>{"loss", "acc"}));
  EXPECT_EQ(m.csv(), "epoch,loss,acc\n1,3,\n2,,0.5\n");
}

// A run resumed at epoch 2: its first flush closes epoch 3, and the CSV starts there.
TEST(Metrics, SkippedEpochsNumberTheRowsOfAResumedRun) {
  Metrics m;
  m.skip_epochs(2);
  m.record("loss", 4);
  ASSERT_TRUE(m.flush().ok());
  EXPECT_EQ(m.epochs(), 3);
  EXPECT_EQ(*m.history("loss"), (std::vector<std::pair<int64_t, double>>{{3, 4}}));
  EXPECT_EQ(m.csv(), "epoch,loss\n3,4\n");
}

TEST(Metrics, SlopeImprovingStalledConverged) {
  Metrics m;
  epochs_of(m, "loss", {10, 8, 6, 5.5, 5.4, 5.45});
  EXPECT_NEAR(*m.slope("loss", 3), -0.025, 1e-12);  // 5.5, 5.4, 5.45
  EXPECT_NEAR(*m.slope("loss", 2), 0.05, 1e-12);     // 5.4 -> 5.45
  EXPECT_DOUBLE_EQ(*m.slope("loss", 100), *m.slope("loss", 6));
  EXPECT_TRUE(*m.improving("loss", 4));             // 6, 5.5, 5.4, 5.45: slope < 0
  EXPECT_FALSE(*m.improving("loss", 2));            // 5.4 -> 5.45 went up
  EXPECT_FALSE(*m.improving("loss", 7));            // fewer than 7 epochs
  // Best of the last 2 (5.4) against the best before them (5.5): improved by 0.1.
  EXPECT_FALSE(*m.stalled("loss", 2, 0.05));
  EXPECT_TRUE(*m.stalled("loss", 2, 0.1 + 1e-12));
  EXPECT_TRUE(*m.stalled("loss", 1, 0));            // 5.45 is no better than 5.4
  EXPECT_FALSE(*m.stalled("loss", 6, 100));         // needs more than n epochs
  EXPECT_TRUE(*m.converged("loss", 3, 0.1 + 1e-12)); // 5.5, 5.4, 5.45
  EXPECT_FALSE(*m.converged("loss", 3, 0.09));
  EXPECT_FALSE(*m.converged("loss", 7, 100));       // fewer than n epochs
}

TEST(Metrics, AMaximizedMetricImprovesUpwards) {
  Metrics m;
  m.set_goal("acc", Goal::maximize);
  epochs_of(m, "acc", {0.5, 0.6, 0.7, 0.69});
  EXPECT_TRUE(*m.improving("acc", 3));
  EXPECT_FALSE(*m.stalled("acc", 2, 0.05));   // best recent 0.7 vs best before 0.6
  EXPECT_TRUE(*m.stalled("acc", 1, 0));       // 0.69 < 0.7
}

TEST(Metrics, GroupQueriesOverDottedPrefixes) {
  Metrics m;
  for (double v : {1.0, 1.0, 1.0}) {
    m.record("encoder.scan.loss", v);
    m.record("encoder.norm", 2 * v);
    m.record("encoderx", 10 - v);  // not under "encoder"
    m.record("head.loss", 5 - v);
    ASSERT_TRUE(m.flush().ok());
  }
  m.record("head.loss", 1);
  ASSERT_TRUE(m.flush().ok());
  EXPECT_EQ(*m.names_under("encoder"), (std::vector<std::string>{"encoder.scan.loss", "encoder.norm"}));
  EXPECT_TRUE(*m.all_converged("encoder", 3, 0));
  EXPECT_TRUE(*m.all_stalled("encoder", 2, 0));
  EXPECT_FALSE(*m.any_improving("encoder", 3));
  EXPECT_TRUE(*m.any_improving("head", 2));
  EXPECT_FALSE(m.all_converged("", 3, 0).ok());  // no name is under ""
}

TEST(Metrics, Errors) {
  Metrics m;
  EXPECT_EQ(m.slope("loss", 3).error().message, "no metric 'loss' was recorded (none has been yet)");
  m.record("loss", 1);
  m.record("acc", 1);
  EXPECT_EQ(m.stalled("los", 3, 0).error().message, "no metric 'los' was recorded (metrics: loss, acc)");
  EXPECT_EQ(m.any_improving("decoder", 3).error().message,
            "no metric under 'decoder' was recorded (metrics: loss, acc)");
  EXPECT_EQ(m.converged("loss", 0, 1).error().message, "a trend needs n >= 1 epochs, got 0");
  ASSERT_TRUE(m.flush().ok());
  EXPECT_EQ(m.current("loss").error().message,
            "metric 'loss' has no value in the current epoch (since the last flush)");
  EXPECT_EQ(m.open_csv("/nonexistent/dir/m.csv", "--metrics-csv=/nonexistent/dir/m.csv")
                .error()
                .message.rfind("--metrics-csv=/nonexistent/dir/m.csv: cannot write it (", 0),
            0u);
}

TEST(Metrics, TheCsvIsRewrittenAtEveryFlush) {
  const char* dir = std::getenv("TEST_TMPDIR");
  const std::string path = std::string(dir ? dir : "/tmp") + "/epochs.csv";
  Metrics m;
  ASSERT_TRUE(m.open_csv(path).ok());
  m.record("loss", 2);
  ASSERT_TRUE(m.flush().ok());
  m.record("loss", 1);
  m.record("encoder.grad_norm", 0.5);  // a column that appears mid-run
  ASSERT_TRUE(m.flush().ok());
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), "epoch,loss,encoder.grad_norm\n1,2,\n2,1,0.5\n");
}

}  // namespace
}  // namespace weft::monitor
