#include "configure/run_recorder.h"
#include "store/testing/test_database.h"

#include <doctest/doctest.h>

namespace prov {
namespace {

struct RecorderFixture {
  std::unique_ptr<Store> store = std::move(*Store::Open(::prov::testing::TestDatabase()));
  NodeRecord node;
  RunRecord run;

  RecorderFixture() {
    Status s = store->Transact([&](StoreTx& tx) -> Status {
      NodeRecord n;
      n.hostname = "n1";
      n.mac = "52:54:00:00:02:01";
      auto added = tx.InsertNode(n);
      if (!added.ok()) return added.status();
      node = *added;
      run.node_id = node.id;
      run.node = node.name();
      run.kind = "playbook";
      run.what = "site.yml";
      run.who = "alice";
      return tx.InsertRun(run);
    });
    REQUIRE(s.ok());
  }
  RunRecord Stored() { return *store->GetRun(run.id); }
};

TaskResult TaskNamed(const std::string& name, const std::string& status) {
  TaskResult r;
  r.playbook = "site.yml";
  r.play = "base";
  r.task = name;
  r.module = "command";
  r.where = "site.yml:" + std::to_string(name.size());
  r.status = ParseTaskStatus(status).value();
  r.changed = status == "changed";
  r.exit_code = status == "failed" ? 2 : 0;
  r.stdout_tail = name + " out";
  r.stderr_tail = name + " err";
  r.msg = status == "failed" ? "exit code 2" : "";
  r.duration_ms = 42;
  r.item = status == "skipped" ? "\"x\"" : "";
  return r;
}

}  // namespace

TEST_CASE("run recorder: each task is a row the moment it ends, with the run's counters") {
  RecorderFixture f;
  RunRecorder recorder(*f.store, f.run);
  recorder.OnTask("n1", TaskNamed("first", "ok"));
  // Live: the run's row counts it already.
  CHECK(f.Stored().ok == 1);
  CHECK(std::string(ToString(f.Stored().status)) == "running");
  recorder.OnTask("n1", TaskNamed("second", "changed"));
  recorder.OnTask("n1", TaskNamed("third", "skipped"));
  recorder.OnTask("n1", TaskNamed("fourth", "failed"));
  recorder.OnTask("n1", TaskNamed("fifth", "unreachable"));
  CHECK(f.run.ok == 1);
  CHECK(f.run.changed == 1);
  CHECK(f.run.skipped == 1);
  CHECK(f.run.failed == 2);  // unreachable counts as failed
  RunRecord stored = f.Stored();
  CHECK(stored.ok == 1);
  CHECK(stored.changed == 1);
  CHECK(stored.skipped == 1);
  CHECK(stored.failed == 2);

  auto tasks = f.store->RunTasks(f.run.id);
  REQUIRE(tasks.size() == 5);
  CHECK(tasks[0].task == "first");
  CHECK(tasks[4].task == "fifth");
  const RunTaskRecord& t = tasks[3];
  CHECK(t.run_id == f.run.id);
  CHECK(t.playbook == "site.yml");
  CHECK(t.play == "base");
  CHECK(t.module == "command");
  CHECK(t.location == "site.yml:6");
  CHECK(std::string(ToString(t.status)) == "failed");
  CHECK(!t.changed);
  CHECK(t.exit_code == 2);
  CHECK(t.stdout_tail == "fourth out");
  CHECK(t.stderr_tail == "fourth err");
  CHECK(t.msg == "exit code 2");
  CHECK(t.duration_ms == 42);
  CHECK(tasks[1].changed);
  CHECK(tasks[2].item == "\"x\"");
}

TEST_CASE("run recorder: the summary of a run") {
  RunRecord run;
  run.status = RunStatus::kFailed;
  run.ok = 3;
  run.changed = 1;
  run.failed = 1;
  CHECK(RunSummary(run, 1240) == "failed: 3 ok, 1 changed, 1 failed, 0 skipped in 1.2 s");
  run.message = "site.yml: breaks";
  CHECK(RunSummary(run, 60000) ==
        "failed: 3 ok, 1 changed, 1 failed, 0 skipped in 60.0 s; site.yml: breaks");
}

TEST_CASE("run recorder: the end of a run is its row and its event") {
  RecorderFixture f;
  RunRecorder recorder(*f.store, f.run);
  recorder.OnTask("n1", TaskNamed("first", "ok"));
  f.run.status = RunStatus::kFailed;
  f.run.message = "site.yml: breaks";
  FinishRun(*f.store, f.run, 2000);
  RunRecord stored = f.Stored();
  CHECK(std::string(ToString(stored.status)) == "failed");
  CHECK(stored.message == "site.yml: breaks");
  CHECK(stored.finished_ms >= stored.started_ms);
  CHECK(stored.finished_ms > 0);
  auto events = f.store->ListEvents(0, f.node.id, 100);
  REQUIRE(!events.empty());
  const EventRecord& e = events.back();
  CHECK(e.kind == "run");
  CHECK(e.who == "alice");
  CHECK(e.detail == "run " + std::to_string(f.run.id) +
                        " (playbook site.yml) failed: 1 ok, 0 changed, 0 failed, 0 skipped in "
                        "2.0 s; site.yml: breaks");
}

TEST_CASE("run recorder: what `also` writes shares the run's transaction") {
  RecorderFixture f;
  f.run.status = RunStatus::kOk;
  std::string seen;
  FinishRun(*f.store, f.run, 0, [&](StoreTx& tx, const std::string& summary) -> Status {
    seen = summary;
    auto n = tx.NodeById(f.node.id);
    n->reason = "touched";
    return tx.UpdateNode(*n);
  });
  CHECK(seen == "ok: 0 ok, 0 changed, 0 failed, 0 skipped in 0.0 s");
  CHECK(f.store->FindNode("n1")->reason == "touched");
  CHECK(std::string(ToString(f.Stored().status)) == "ok");

  // A failure there rolls the whole end back: the run stays as it was.
  RecorderFixture g;
  g.run.status = RunStatus::kOk;
  size_t events = g.store->ListEvents(0, g.node.id, 100).size();
  FinishRun(*g.store, g.run, 0,
            [](StoreTx&, const std::string&) { return Status::Conflict("refused"); });
  CHECK(std::string(ToString(g.Stored().status)) == "running");
  CHECK(g.store->ListEvents(0, g.node.id, 100).size() == events);
}

TEST_CASE("run recorder: runs and tasks as JSON") {
  RunRecord r;
  r.id = 9;
  r.node = "n1";
  r.kind = "configure";
  r.what = "v0.1";
  r.status = RunStatus::kOk;
  r.changed = 4;
  auto j = ToJson(r);
  CHECK(j["id"] == 9);
  CHECK(j["node"] == "n1");
  CHECK(j["kind"] == "configure");
  CHECK(j["changed"] == 4);
  CHECK(j.contains("profile_sha256"));
  CHECK(j.contains("who"));
  RunTaskRecord t;
  t.location = "site.yml:3";
  t.stdout_tail = "out";
  t.stderr_tail = "err";
  auto tj = ToJson(t);
  CHECK(tj["location"] == "site.yml:3");
  CHECK(tj["stdout"] == "out");
  CHECK(tj["stderr"] == "err");
  CHECK(tj["exit_code"] == -1);
}

}  // namespace prov
