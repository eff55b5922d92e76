// The training monitor: the CSV's columns and rows, and the HTML report's charts.

#include "training/monitor/monitor.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>

#include <fstream>
#include <sstream>

#include "tests/testing/subprocess.h"

namespace weft::monitor {
namespace {

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

RunLog& filled(RunLog& log) {
  for (int64_t t = 1; t <= 6; ++t) {
    std::map<std::string, double> metrics;
    if (t % 3 == 0) metrics = {{"test_accuracy", 0.5 + 0.1 * t}};
    log.record({.step = t, .epoch = (t - 1) / 3 + 1, .loss = 2.0 / t, .lr = 0.01, .examples_per_s = 1000.0 + static_cast<double>(t),
                .elapsed_s = 0.5 * t},
               metrics);
    if (t % 3 == 0) log.end_epoch(t / 3, 1.5);
  }
  return log;
}

TEST(RunLog, CsvHasTheRequiredColumnsAndOneRowPerStep) {
  const std::string path = testing::test_tmpdir() + "/metrics.csv";
  RunLog log({"test_accuracy"});
  ASSERT_TRUE(log.open_csv(path).ok());
  filled(log);
  std::istringstream csv(read(path));
  std::string line;
  std::getline(csv, line);
  EXPECT_EQ(line, "epoch,step,loss,lr,examples_per_s,elapsed_s,rss_mib,test_accuracy");
  std::vector<std::string> rows;
  while (std::getline(csv, line)) rows.push_back(line);
  ASSERT_EQ(rows.size(), 6u);
  EXPECT_EQ(rows[0].rfind("1,1,2,0.01,1001.0,0.500,", 0), 0u) << rows[0];
  EXPECT_EQ(rows[0].back(), ',');  // no accuracy measured at step 1
  EXPECT_EQ(rows[2].rfind("1,3,0.666666667,0.01,1003.0,1.500,", 0), 0u) << rows[2];
  EXPECT_EQ(rows[2].substr(rows[2].rfind(',')), ",0.8");
}

TEST(RunLog, CsvErrorNamesTheFlag) {
  RunLog log;
  Status s = log.open_csv("/nonexistent/dir/m.csv", "--metrics-csv=/nonexistent/dir/m.csv");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message, "--metrics-csv=/nonexistent/dir/m.csv: cannot write it (No such file or directory)");
}

TEST(RunLog, ReportIsOneSelfContainedPageOfCharts) {
  RunLog log({"test_accuracy", "test_loss"});
  filled(log);
  const std::string path = testing::test_tmpdir() + "/report.html";
  ASSERT_TRUE(log.write_report(path, "mlp <on> Fashion-MNIST").ok());
  const std::string html = read(path);
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.find("<title>mlp &lt;on&gt; Fashion-MNIST</title>"), std::string::npos);
  // loss, two metrics, time per epoch, memory, learning rate.
  EXPECT_EQ(count(html, "<svg class=\"chart\""), 6);
  EXPECT_EQ(count(html, "class=\"bar\""), 2);  // two epochs
  EXPECT_NE(html.find("test_loss</text>"), std::string::npos);
  EXPECT_NE(html.find("no data"), std::string::npos);  // test_loss was never measured
  EXPECT_EQ(html.find("<script src"), std::string::npos);
  EXPECT_EQ(html.find("href=\"http"), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
}

TEST(RunLog, ReportChartsTheDottedMetricsPerEpoch) {
  RunLog log({"test_accuracy", "test_loss"});
  filled(log);
  Metrics metrics;
  metrics.record("encoder.scan.loss", 2);
  metrics.record("hidden.mean", 0.5);
  ASSERT_TRUE(metrics.flush().ok());
  metrics.record("encoder.scan.loss", 1);
  ASSERT_TRUE(metrics.flush().ok());
  log.show_metrics(&metrics);
  const std::string html = log.report_html("run");
  // The six of the report above, and one chart per dotted metric.
  EXPECT_EQ(count(html, "<svg class=\"chart\""), 8);
  EXPECT_NE(html.find("encoder.scan.loss (per epoch)"), std::string::npos);
  EXPECT_NE(html.find("hidden.mean (per epoch)"), std::string::npos);
}

TEST(Monitor, FormatsDurationsAndReadsMemory) {
  EXPECT_EQ(format_duration(12.4), "0:12");
  EXPECT_EQ(format_duration(187), "3:07");
  EXPECT_EQ(format_duration(3725), "1:02:05");
  EXPECT_EQ(format_duration(-1), "?");
  EXPECT_GT(resident_bytes(), 0);
  EXPECT_GE(peak_resident_bytes(), resident_bytes());
}

// On a terminal the line is rewritten in place; under mpirun the ranks' terminal is the
// launcher's copy into a log, so the lines are plain there (escapes used to end up in it).
TEST(Progress, PlainLinesUnderAnMpiLauncherEvenOnATerminal) {
  const int master = ::posix_openpt(O_RDWR | O_NOCTTY);
  ASSERT_GE(master, 0);
  ASSERT_EQ(::grantpt(master), 0);
  ASSERT_EQ(::unlockpt(master), 0);
  std::FILE* terminal = std::fopen(::ptsname(master), "w");
  ASSERT_NE(terminal, nullptr);
  auto shown = [&](bool under_launcher) {
    Progress progress(terminal, /*every=*/1, under_launcher);
    progress.update(/*step=*/2, /*total=*/2, /*epoch=*/0, /*epochs=*/1, /*loss=*/0.5, /*lr=*/0.1, 10);
    char buf[512];
    const ssize_t n = ::read(master, buf, sizeof(buf));
    return std::string(buf, n > 0 ? static_cast<size_t>(n) : 0);
  };
  EXPECT_EQ(shown(/*under_launcher=*/false).substr(0, 1), "\r");
  const std::string plain = shown(/*under_launcher=*/true);
  EXPECT_EQ(plain.find('\033'), std::string::npos) << plain;
  EXPECT_EQ(plain.rfind("step 2/2  epoch 1/1  loss 0.5000", 0), 0u) << plain;
  std::fclose(terminal);
  ::close(master);
}

}  // namespace
}  // namespace weft::monitor
