#include "store/store_metrics.h"

#include <doctest/doctest.h>

#include "store/store.h"
#include "store/testing/test_database.h"

namespace prov {
namespace {

// The line of `text` that starts with `prefix`, or "".
std::string Line(const std::string& text, const std::string& prefix) {
  size_t at = text.find(prefix);
  if (at == std::string::npos) return "";
  return text.substr(at, text.find('\n', at) - at);
}

Status Stage(Store& store, int64_t node_id, const std::string& detail, int64_t time_ms) {
  return store.Transact([&](StoreTx& tx) {
    EventRecord e{0,      time_ms, node_id, "n0",
                  "boot", detail,  "boot",  ParseBootStage(detail.substr(0, detail.find(':')))};
    return tx.AppendEvent(e);
  });
}

}  // namespace

TEST_CASE("metrics: boot stages timed from the previous stage of the same boot") {
  auto opened = Store::Open(::prov::testing::TestDatabase());
  REQUIRE(opened.ok());
  Store& store = **opened;
  NodeRecord node;
  REQUIRE(store
              .Transact([&](StoreTx& tx) {
                NodeRecord n;
                n.hostname = "n0";
                n.mac = "52:54:00:00:00:01";
                auto r = tx.InsertNode(n);
                if (r.ok()) node = *r;
                return r.status();
              })
              .ok());
  const int64_t t0 = 1'700'000'000'000;
  REQUIRE(Stage(store, node.id, "dhcp: 10.99.0.10", t0).ok());
  REQUIRE(Stage(store, node.id, "ipxe-binary: undionly.kpxe", t0 + 80).ok());
  REQUIRE(Stage(store, node.id, "script: n0.ipxe", t0 + 380).ok());
  REQUIRE(Stage(store, node.id, "kernel: lab@1", t0 + 2380).ok());
  // A rolled-back write is not counted.
  CHECK_FALSE(store
                  .Transact([&](StoreTx& tx) {
                    EventRecord e{0,      t0 + 2400,       node.id, "n0",
                                  "boot", "initrd: lab@1", "boot",  BootStage::kInitrd};
                    Status s = tx.AppendEvent(e);
                    return s.ok() ? Status::Invalid("no") : s;
                  })
                  .ok());
  REQUIRE(Stage(store, node.id, "initrd: lab@1", t0 + 2500).ok());
  // The next boot starts again at dhcp: no "dhcp" duration.
  REQUIRE(Stage(store, node.id, "dhcp: 10.99.0.10", t0 + 60000).ok());

  const std::string text = store.MetricsText();
  INFO(text);
  CHECK(text.find("# TYPE provisiond_boot_stage_seconds histogram") != std::string::npos);
  CHECK(Line(text, "provisiond_boot_stage_seconds_count{stage=\"ipxe-binary\"}") ==
        "provisiond_boot_stage_seconds_count{stage=\"ipxe-binary\"} 1");
  CHECK(Line(text, "provisiond_boot_stage_seconds_bucket{stage=\"ipxe-binary\",le=\"0.05\"}") ==
        "provisiond_boot_stage_seconds_bucket{stage=\"ipxe-binary\",le=\"0.05\"} 0");
  CHECK(Line(text, "provisiond_boot_stage_seconds_bucket{stage=\"ipxe-binary\",le=\"0.1\"}") ==
        "provisiond_boot_stage_seconds_bucket{stage=\"ipxe-binary\",le=\"0.1\"} 1");
  CHECK(Line(text, "provisiond_boot_stage_seconds_sum{stage=\"kernel\"}") ==
        "provisiond_boot_stage_seconds_sum{stage=\"kernel\"} 2");
  CHECK(Line(text, "provisiond_boot_stage_seconds_count{stage=\"initrd\"}") ==
        "provisiond_boot_stage_seconds_count{stage=\"initrd\"} 1");
  CHECK(Line(text, "provisiond_boot_stage_seconds_sum{stage=\"initrd\"}") ==
        "provisiond_boot_stage_seconds_sum{stage=\"initrd\"} 0.12");
  CHECK(Line(text, "provisiond_boot_stage_seconds_count{stage=\"dhcp\"}").empty());
  CHECK(Line(text, "provisiond_boot_stage_seconds_bucket{stage=\"kernel\",le=\"+Inf\"}") ==
        "provisiond_boot_stage_seconds_bucket{stage=\"kernel\",le=\"+Inf\"} 1");

  // A finished run is timed by its kind.
  RunRecord run;
  run.node_id = node.id;
  run.node = "n0";
  run.kind = "configure";
  run.started_ms = t0;
  REQUIRE(store.Transact([&](StoreTx& tx) { return tx.InsertRun(run); }).ok());
  CHECK(Line(store.MetricsText(), "provisiond_run_seconds_count").empty());  // still running
  run.status = RunStatus::kOk;
  run.finished_ms = t0 + 42000;
  REQUIRE(store.Transact([&](StoreTx& tx) { return tx.UpdateRun(run); }).ok());
  const std::string after = store.MetricsText();
  CHECK(Line(after, "provisiond_run_seconds_count{kind=\"configure\"}") ==
        "provisiond_run_seconds_count{kind=\"configure\"} 1");
  CHECK(Line(after, "provisiond_run_seconds_bucket{kind=\"configure\",le=\"30\"}") ==
        "provisiond_run_seconds_bucket{kind=\"configure\",le=\"30\"} 0");
  CHECK(Line(after, "provisiond_run_seconds_bucket{kind=\"configure\",le=\"60\"}") ==
        "provisiond_run_seconds_bucket{kind=\"configure\",le=\"60\"} 1");
}

}  // namespace prov
