// Run records as they happen: each task of a run is a run_tasks row the
// moment it finishes, with the run's counters updated in the same
// transaction (so `provisionctl run show` follows a run live), and the end of
// a run is its final row and a "run" event with its summary.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <string>

#include "base/result.h"
#include "configure/play_runner.h"
#include "store/store.h"

namespace prov {

nlohmann::json ToJson(const RunRecord& r);
nlohmann::json ToJson(const RunTaskRecord& t);

// The RunSink of one run. Not thread-safe: one run's tasks come from one
// thread. `store` and `run` (inserted already: it has its id) must outlive
// it; the recorder counts into `run`.
class RunRecorder : public RunSink {
 public:
  RunRecorder(Store& store, RunRecord& run) : store_(store), run_(run) {}

  // Appends the task's row and counts it into the run (ok, changed, failed
  // with unreachable, skipped) in one transaction. A store error is logged:
  // the run goes on.
  void OnTask(const std::string& node, const TaskResult& result) override;

 private:
  Store& store_;
  RunRecord& run_;
};

// "ok: 3 ok, 1 changed, 0 failed, 0 skipped in 1.2 s[; message]".
std::string RunSummary(const RunRecord& run, int64_t elapsed_ms);

// Ends `run` with the status and message set on it: finished now, its row
// and its "run" event in one transaction, together with whatever `also`
// writes (given the summary; a configure run moves its node on). A store
// error is logged.
void FinishRun(Store& store, RunRecord& run, int64_t elapsed_ms,
               const std::function<Status(StoreTx&, const std::string& summary)>& also = {});

}  // namespace prov
