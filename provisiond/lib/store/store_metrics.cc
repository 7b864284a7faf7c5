#include "store/store_metrics.h"

#include <algorithm>
#include <cstdio>

#include "store/boot_stage.h"

namespace prov {
namespace {

std::string Number(double v) {
  char buf[32];
  snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

int StagePosition(const std::string& stage) {
  const std::optional<BootStage> s = ParseBootStage(stage);
  return s ? static_cast<int>(*s) : -1;
}

// A boot under TCG takes minutes, a stage on real hardware milliseconds to
// a minute; a configure run seconds to an hour.
const std::vector<double> kStageBounds = {0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300};
const std::vector<double> kRunBounds = {1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600};
// Longer than this between two stages is not one boot.
constexpr int64_t kOneBootMs = 2 * 3600 * 1000;

}  // namespace

Histograms::Histograms(std::string name, std::string help, std::string label,
                       std::vector<double> bounds)
    : name_(std::move(name)),
      help_(std::move(help)),
      label_(std::move(label)),
      bounds_(std::move(bounds)) {}

void Histograms::Observe(const std::string& label_value, double value) {
  std::lock_guard lock(mu_);
  Series& s = series_[label_value];
  if (s.counts.empty()) s.counts.assign(bounds_.size() + 1, 0);
  size_t i = std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin();
  ++s.counts[i];
  s.sum += value;
  ++s.count;
}

std::string Histograms::Prometheus() const {
  std::string out = "# HELP " + name_ + " " + help_ + "\n# TYPE " + name_ + " histogram\n";
  std::lock_guard lock(mu_);
  for (const auto& [value, s] : series_) {
    const std::string label = label_ + "=\"" + value + "\"";
    uint64_t cumulative = 0;
    for (size_t i = 0; i < bounds_.size(); ++i) {
      cumulative += s.counts[i];
      out += name_ + "_bucket{" + label + ",le=\"" + Number(bounds_[i]) + "\"} " +
             std::to_string(cumulative) + "\n";
    }
    out += name_ + "_bucket{" + label + ",le=\"+Inf\"} " + std::to_string(s.count) + "\n";
    out += name_ + "_sum{" + label + "} " + Number(s.sum) + "\n";
    out += name_ + "_count{" + label + "} " + std::to_string(s.count) + "\n";
  }
  return out;
}

StoreMetrics::StoreMetrics()
    : boot_stages_("provisiond_boot_stage_seconds",
                   "Time from a node's previous boot stage to this one, by the stage reached.",
                   "stage", kStageBounds),
      runs_("provisiond_run_seconds",
            "Duration of finished runs over SSH by kind (configure, playbook, cmd).", "kind",
            kRunBounds) {}

void StoreMetrics::Apply(const std::vector<MetricObservation>& observed) {
  for (const auto& o : observed) {
    if (o.kind == MetricObservation::Kind::kRun) {
      runs_.Observe(o.what, o.seconds);
      continue;
    }
    const int at = StagePosition(o.what);
    if (at < 0 || o.node_id == 0) continue;
    std::pair<std::string, int64_t> previous;
    {
      std::lock_guard lock(mu_);
      auto [it, first] = last_stage_.try_emplace(o.node_id, o.what, o.time_ms);
      if (first) continue;
      previous = it->second;
      it->second = {o.what, o.time_ms};
    }
    // A stage at or before the previous one starts another boot.
    const int64_t took = o.time_ms - previous.second;
    if (at > StagePosition(previous.first) && took >= 0 && took < kOneBootMs)
      boot_stages_.Observe(o.what, static_cast<double>(took) / 1000.0);
  }
}

std::string StoreMetrics::Prometheus() const {
  return boot_stages_.Prometheus() + runs_.Prometheus();
}

}  // namespace prov
