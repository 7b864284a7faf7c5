// Durations for provisiond's /metrics, observed as the inventory records
// them: how long each boot stage took (from the node's previous stage of the
// same boot to this one) and how long configure, playbook and cmd runs took,
// as Prometheus histograms. The store observes what a transaction wrote once
// it commits (a rolled-back write is never counted).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace prov {

// Cumulative-bucket histograms by one label's value.
class Histograms {
 public:
  Histograms(std::string name, std::string help, std::string label, std::vector<double> bounds);
  void Observe(const std::string& label_value, double value);
  // The family in Prometheus's text format (HELP, TYPE, every series).
  std::string Prometheus() const;

 private:
  struct Series {
    std::vector<uint64_t> counts;  // per bucket, not cumulative
    double sum = 0;
    uint64_t count = 0;
  };
  std::string name_, help_, label_;
  std::vector<double> bounds_;
  mutable std::mutex mu_;
  std::map<std::string, Series> series_;  // guarded by mu_
};

// What a transaction wrote that /metrics counts.
struct MetricObservation {
  enum class Kind { kBootStage, kRun } kind;
  int64_t node_id = 0;
  std::string what;     // the stage, or the run's kind ("configure")
  std::string status;   // a run's end status
  int64_t time_ms = 0;  // a stage: when it was reached
  double seconds = 0;   // a run: how long it took
};

class StoreMetrics {
 public:
  StoreMetrics();
  // Counts what a committed transaction wrote, in order.
  void Apply(const std::vector<MetricObservation>& observed);
  std::string Prometheus() const;

 private:
  Histograms boot_stages_, runs_;
  std::mutex mu_;
  // Each node's latest stage and when it was reached: guarded by mu_.
  std::map<int64_t, std::pair<std::string, int64_t>> last_stage_;
};

}  // namespace prov
