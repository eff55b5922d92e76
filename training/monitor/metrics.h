#pragma once
// Metrics across the graph tree, and trend queries a training loop can act on.
//
//   monitor::Metrics m;
//   m.set_goal("test_accuracy", monitor::Goal::maximize);   // others: lower is better
//   for (epoch ...) {
//     for (batch ...) m.record("loss", loss);               // batch values ...
//     m.record("test_accuracy", accuracy);
//     m.flush();                                            // ... become one epoch value
//     if (*m.stalled("loss", /*n=*/3, /*tol=*/1e-3)) trainer.set_lr(trainer.lr() / 10);
//     if (*m.all_converged("encoder", 5, 1e-4)) trainer.freeze("encoder");
//   }
//
// Names are dotted paths of the graph tree (`encoder.scan.loss`, `hidden.mean`); a group
// query takes a prefix and asks every name under it (the name itself, or `prefix.` then
// anything). Values recorded between two flush() calls are a metric's batch values; flush()
// appends their mean to its epoch history (a metric recorded nothing in an epoch gets no
// point that epoch). The queries read the epoch history:
//
//  - slope(name, n): the least-squares slope, per epoch, of the last n values (or all of
//    them when fewer); 0 with fewer than two.
//  - improving(name, n): at least n values and their slope goes the goal's way (< 0 for
//    Goal::minimize, > 0 for Goal::maximize).
//  - stalled(name, n, tol): more than n values, and the best of the last n improves on the
//    best before them by no more than tol (PyTorch's ReduceLROnPlateau patience, absolute).
//  - converged(name, n, tol): at least n values, and the last n lie within tol of each
//    other (max - min <= tol).
// Each is an error for a name never recorded, or a group prefix with no name under it.
// `open_csv` keeps an epoch CSV (`epoch` then one column per name, in order of first
// record), rewritten atomically at every flush so a metric that appears mid-run gets its
// column.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ir/status.h"

namespace weft::monitor {

/// Which way a metric should move.
enum class Goal { minimize, maximize };

class Metrics {
 public:
  /// A batch value of `name` in the current epoch.
  void record(const std::string& name, double value);
  /// Closes the epoch: every metric recorded since the last flush gains the mean of its
  /// batch values as its next epoch value. Writes the CSV when one is open.
  Status flush();
  /// Epochs closed so far (counting those skipped by skip_epochs).
  int64_t epochs() const { return epochs_; }
  /// Counts `n` epochs as closed before anything was recorded (a run resumed at epoch n):
  /// the next flush closes epoch n+1, and the CSV's rows start there. Only before the
  /// first flush.
  void skip_epochs(int64_t n);

  void set_goal(const std::string& name, Goal goal) { goals_[name] = goal; }
  Goal goal(const std::string& name) const;

  /// Every name recorded so far, in order of first record.
  const std::vector<std::string>& names() const { return order_; }
  /// The epoch values of `name` as (epoch, value), epochs 1-based.
  StatusOr<std::vector<std::pair<int64_t, double>>> history(const std::string& name) const;
  /// The mean of `name`'s batch values in the current (unflushed) epoch.
  StatusOr<double> current(const std::string& name) const;

  StatusOr<double> slope(const std::string& name, int64_t n) const;
  StatusOr<bool> improving(const std::string& name, int64_t n) const;
  StatusOr<bool> stalled(const std::string& name, int64_t n, double tol) const;
  StatusOr<bool> converged(const std::string& name, int64_t n, double tol) const;

  /// Group queries over every name under `prefix`.
  StatusOr<std::vector<std::string>> names_under(const std::string& prefix) const;
  StatusOr<bool> any_improving(const std::string& prefix, int64_t n) const;
  StatusOr<bool> all_stalled(const std::string& prefix, int64_t n, double tol) const;
  StatusOr<bool> all_converged(const std::string& prefix, int64_t n, double tol) const;

  /// Keeps the epoch CSV at `path` (written at every flush). Errors name `what` or the path.
  Status open_csv(const std::string& path, const std::string& what = "");
  /// The epoch CSV's text.
  std::string csv() const;

 private:
  struct Series {
    std::vector<std::pair<int64_t, double>> epochs;
    double batch_sum = 0;
    int64_t batch_count = 0;
  };
  StatusOr<const Series*> find(const std::string& name) const;
  /// " (metrics: a, b)", or " (none has been yet)": for errors naming an unknown metric.
  std::string known() const;
  /// The last min(n, size) epoch values of `name`.
  StatusOr<std::vector<double>> last(const std::string& name, int64_t n) const;

  std::map<std::string, Series> series_;
  std::vector<std::string> order_;
  std::map<std::string, Goal> goals_;
  int64_t epochs_ = 0;
  int64_t skipped_ = 0;  ///< Epochs closed before the first record (skip_epochs).
  std::string csv_path_;
};

}  // namespace weft::monitor
