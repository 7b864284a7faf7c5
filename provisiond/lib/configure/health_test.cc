#include "configure/health.h"

#include <doctest/doctest.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "base/temp_dir.h"
#include "configure/run_recorder.h"
#include "store/testing/test_database.h"

namespace prov {
namespace {

// A node that does not answer.
class GoneRemote : public Remote {
 public:
  const std::string& node() const override { return name_; }
  Result<RemoteResult> Run(const std::string&, const std::string&, const std::string&,
                           int) override {
    return Status::Error(Code::kUnavailable, "node n1: the session broke");
  }

 private:
  std::string name_ = "n1";
};

struct HealthFixture {
  std::unique_ptr<Store> store = std::move(*Store::Open(::prov::testing::TestDatabase()));
  NodeRecord node;
  RunRecord run;
  Profile profile;
  LocalRemote local{"n1"};

  // A booted node in `configuring` with a configure run, as a run has it
  // when its playbooks are done.
  HealthFixture() {
    profile.version = "v0.1";
    profile.sha256 = "abc123";
    profile.file = "profiles/v0.1/profile.yaml";
    Status s = store->Transact([&](StoreTx& tx) -> Status {
      NodeRecord n;
      n.hostname = "n1";
      n.mac = "52:54:00:00:03:01";
      n.ip = "10.0.0.1";
      n.state = NodeState::kBooted;
      n.profile_version = "v0.1";
      auto added = tx.InsertNode(n);
      if (!added.ok()) return added.status();
      node = *added;
      Status t = tx.Transition(node, NodeState::kConfiguring, "profile v0.1", "test");
      if (!t.ok()) return t;
      run.node_id = node.id;
      run.node = node.name();
      run.kind = "configure";
      run.what = "v0.1";
      run.profile_sha256 = profile.sha256;
      run.who = "test";
      return tx.InsertRun(run);
    });
    REQUIRE(s.ok());
  }
  void Check(const std::string& name, const std::string& command, long timeout_s = 10) {
    profile.health_checks.push_back({name, command, timeout_s});
  }
  HealthOutcome RunChecks(Remote& remote) {
    RunRecorder recorder(*store, run);
    return RunHealthChecks(profile, node, remote, recorder, *store);
  }
  std::vector<std::string> HealthEvents() {
    std::vector<std::string> out;
    for (const auto& e : store->ListEvents(0, node.id, 100))
      if (e.kind == "health") out.push_back(e.detail);
    return out;
  }
  // Ends the run as a configure run does, through the gate.
  NodeRecord Finish(RunStatus status, const std::string& message = "") {
    run.status = status;
    run.message = message;
    FinishRun(*store, run, 10, [&](StoreTx& tx, const std::string& summary) {
      return MoveNodeOn(tx, run, profile.sha256, summary);
    });
    return *store->FindNode("n1");
  }
};

}  // namespace

TEST_CASE("health: passing checks are tasks of the run and events; the node is ready") {
  HealthFixture f;
  f.Check("disk", "echo plenty");
  f.Check("gpu", "true");
  HealthOutcome out = f.RunChecks(f.local);
  CHECK(std::string(ToString(out.status)) == "ok");
  CHECK(out.message.empty());
  auto tasks = f.store->RunTasks(f.run.id);
  REQUIRE(tasks.size() == 2);
  CHECK(tasks[0].playbook == "health");
  CHECK(tasks[0].play == "health checks");
  CHECK(tasks[0].task == "disk");
  CHECK(tasks[0].module == "health");
  CHECK(tasks[0].location == "profiles/v0.1/profile.yaml");
  CHECK(std::string(ToString(tasks[0].status)) == "ok");
  CHECK(tasks[0].exit_code == 0);
  CHECK(tasks[0].stdout_tail == "plenty\n");
  CHECK(tasks[1].task == "gpu");
  CHECK(f.run.ok == 2);
  CHECK(f.HealthEvents() == std::vector<std::string>{"disk: ok", "gpu: ok"});

  NodeRecord n = f.Finish(RunStatus::kOk);
  CHECK(n.state == NodeState::kReady);
  CHECK(n.configured == "abc123");
}

TEST_CASE("health: a failing check fails the run with its output; later checks do not run") {
  HealthFixture f;
  f.Check("first", "true");
  f.Check("broken", "echo partial; echo 'no GPU found' >&2; exit 3");
  f.Check("never", "touch /nonexistent/never-run");
  HealthOutcome out = f.RunChecks(f.local);
  CHECK(std::string(ToString(out.status)) == "failed");
  CHECK(out.message == "health check broken: exit code 3: no GPU found\n");
  auto tasks = f.store->RunTasks(f.run.id);
  REQUIRE(tasks.size() == 2);
  CHECK(std::string(ToString(tasks[1].status)) == "failed");
  CHECK(tasks[1].exit_code == 3);
  CHECK(tasks[1].msg == "exit code 3");
  CHECK(tasks[1].stdout_tail == "partial\n");
  CHECK(f.run.failed == 1);
  CHECK(f.HealthEvents() == std::vector<std::string>{"first: ok", "broken: failed (exit code 3)"});

  // The gate: a failed check keeps the node from `ready`.
  NodeRecord n = f.Finish(out.status, out.message);
  CHECK(n.state == NodeState::kFailed);
  CHECK(n.reason == "configure: health check broken: exit code 3: no GPU found\n");
  CHECK(n.configured.empty());
}

TEST_CASE("health: the message keeps the last 300 bytes of stdout when stderr is empty") {
  HealthFixture f;
  f.Check("long", "printf 'x%.0s' $(seq 1 500); printf END; exit 1");
  HealthOutcome out = f.RunChecks(f.local);
  CHECK(std::string(ToString(out.status)) == "failed");
  const std::string head = "health check long: exit code 1: ";
  REQUIRE(out.message.rfind(head, 0) == 0);
  CHECK(out.message.size() == head.size() + 300);
  CHECK(out.message.substr(out.message.size() - 3) == "END");
}

TEST_CASE("health: a check that runs past its timeout fails") {
  HealthFixture f;
  // Had the check been waited for, it would have written `finished`.
  TempDir dir;
  const std::string finished = dir.path() + "/finished";
  f.Check("slow", "sleep 30; touch " + finished, 1);
  HealthOutcome out = f.RunChecks(f.local);
  CHECK_FALSE(std::filesystem::exists(finished));
  CHECK(std::string(ToString(out.status)) == "failed");
  CHECK(out.message.rfind("health check slow: timed out after 1 s", 0) == 0);
  auto tasks = f.store->RunTasks(f.run.id);
  REQUIRE(tasks.size() == 1);
  CHECK(std::string(ToString(tasks[0].status)) == "failed");
  CHECK(tasks[0].msg == "timed out after 1 s");
  CHECK(tasks[0].duration_ms >= 900);
  CHECK(f.HealthEvents() == std::vector<std::string>{"slow: failed (timed out after 1 s)"});
  CHECK(f.Finish(out.status, out.message).state == NodeState::kFailed);
}

TEST_CASE("health: a node that stops answering is unreachable") {
  HealthFixture f;
  f.Check("disk", "true");
  GoneRemote gone;
  HealthOutcome out = f.RunChecks(gone);
  CHECK(std::string(ToString(out.status)) == "unreachable");
  CHECK(out.message == "health check disk: node n1: the session broke");
  auto tasks = f.store->RunTasks(f.run.id);
  REQUIRE(tasks.size() == 1);
  CHECK(std::string(ToString(tasks[0].status)) == "unreachable");
  CHECK(tasks[0].exit_code == -1);
  CHECK(f.run.failed == 1);
  NodeRecord n = f.Finish(out.status, out.message);
  CHECK(n.state == NodeState::kFailed);
  CHECK(n.reason == "configure: health check disk: node n1: the session broke");
}

TEST_CASE("health: a profile without checks passes") {
  HealthFixture f;
  GoneRemote gone;  // never asked
  CHECK(std::string(ToString(f.RunChecks(gone).status)) == "ok");
  CHECK(f.store->RunTasks(f.run.id).empty());
}

TEST_CASE("health: the gate leaves the node alone when the run is not its to judge") {
  SUBCASE("interrupted: provisiond stopped") {
    HealthFixture f;
    CHECK(f.Finish(RunStatus::kInterrupted).state == NodeState::kConfiguring);
  }
  SUBCASE("rebooted: configured again after its hello") {
    HealthFixture f;
    CHECK(f.Finish(RunStatus::kRebooted).state == NodeState::kConfiguring);
  }
  SUBCASE("the node left `configuring` meanwhile (a new hello)") {
    HealthFixture f;
    REQUIRE(f.store
                ->Transact([&](StoreTx& tx) -> Status {
                  auto n = tx.NodeById(f.node.id);
                  return tx.Transition(*n, NodeState::kBooting, "rebooted", "test");
                })
                .ok());
    CHECK(f.Finish(RunStatus::kOk).state == NodeState::kBooting);
  }
  SUBCASE("a playbook run changes no node") {
    HealthFixture f;
    f.run.kind = "playbook";
    CHECK(f.Finish(RunStatus::kFailed, "site.yml: breaks").state == NodeState::kConfiguring);
  }
  SUBCASE("ok: ready, with the profile's hash and the summary in the event") {
    HealthFixture f;
    CHECK(f.Finish(RunStatus::kOk).state == NodeState::kReady);
    auto events = f.store->ListEvents(0, f.node.id, 100);
    CHECK(events.back().kind == "state");
    CHECK(events.back().detail ==
          "configuring -> ready: profile v0.1 configured (ok: 0 ok, 0 changed, 0 failed, 0 "
          "skipped in 0.0 s)");
  }
}

TEST_CASE("health: the hook gets the outcome in its environment, its output is an event") {
  HealthFixture f;
  char dir[] = "/tmp/health-hook-XXXXXX";
  REQUIRE(mkdtemp(dir) != nullptr);
  const std::string seen = std::string(dir) + "/seen";
  f.Check("scratch", "echo 'line one'; echo \"line 'two'\" >&2; exit 4");
  f.profile.health_hook =
      "printf '%s|%s|%s\\n' \"$PROVISION_HEALTH_STATUS\" "
      "\"$PROVISION_HEALTH_REASON\" \"$PROVISION_NODE\" >" +
      seen + "; echo drained \"$PROVISION_NODE\"";
  HealthOutcome out = f.RunChecks(f.local);
  REQUIRE(std::string(ToString(out.status)) == "failed");
  KeepHealth(*f.store, &f.local, f.profile, f.node, f.run.id, out);
  std::ifstream in(seen);
  std::string line, more;
  REQUIRE(std::getline(in, line));
  // The reason is one line, the check's own quotes untouched.
  CHECK(line == "failed|scratch: exit code 4: line 'two' |n1");
  CHECK_FALSE(std::getline(in, more));
  CHECK(f.HealthEvents().back() == "hook: drained n1");

  // Passing: status ok, no reason.
  f.profile.health_checks.clear();
  f.Check("scratch", "true");
  out = f.RunChecks(f.local);
  RunHealthHook(*f.store, f.local, f.profile, f.node, out);
  std::ifstream again(seen);
  REQUIRE(std::getline(again, line));
  CHECK(line == "ok||n1");
  std::filesystem::remove_all(dir);
}

TEST_CASE("health: a hook that fails is an event, not an error; no hook when unreachable") {
  HealthFixture f;
  f.Check("disk", "true");
  f.profile.health_hook = "echo 'scontrol: cannot reach slurmctld' >&2; exit 3";
  HealthOutcome out = f.RunChecks(f.local);
  RunHealthHook(*f.store, f.local, f.profile, f.node, out);
  CHECK(f.HealthEvents().back() == "hook failed (exit code 3): scontrol: cannot reach slurmctld");
  GoneRemote gone;
  HealthOutcome lost = f.RunChecks(gone);
  REQUIRE(std::string(ToString(lost.status)) == "unreachable");
  const size_t before = f.HealthEvents().size();
  RunHealthHook(*f.store, gone, f.profile, f.node, lost);
  CHECK(f.HealthEvents().size() == before);
}

}  // namespace prov
