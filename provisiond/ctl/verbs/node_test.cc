// The node verbs against a fake provisiond: what they send, and how they
// read its replies (a node's 503, an unreachable daemon).
#include <doctest/doctest.h>

#include <sstream>
#include <vector>

#include "../cli.h"
#include "../client.h"
#include "../testing/fake_daemon.h"
#include "../verb.h"

namespace prov::ctl {

using json = nlohmann::json;

TEST_CASE("node power goes on past a node whose driver failed (HTTP 503)") {
  CurlGlobal curl;
  FakeDaemon d;
  d.Add("POST", "/api/v1/nodes/{node}/power", [](const HttpRequest& r) {
    const std::string node = r.Param("node");
    if (node == "node1")
      return HttpResponse::Error(503, "/usr/bin/ipmitool ... failed (exit 1): no answer");
    if (node == "node2") return HttpResponse::Error(400, "node2 has no power driver");
    return HttpResponse::Json(200, {{"node", node},
                                    {"action", json::parse(r.body)["action"]},
                                    {"result", "command: cycled " + node}});
  });
  Run r = d.Cli({"node", "power", "cycle", "node[0-3]"});
  CHECK(r.status == kExitFailed);
  CHECK(r.out ==
        "node0: cycle (command: cycled node0)\n"
        "node3: cycle (command: cycled node3)\n");
  CHECK(r.err ==
        "provisionctl: node1: /usr/bin/ipmitool ... failed (exit 1): no answer\n"
        "provisionctl: node2: node2 has no power driver\n"
        "provisionctl: 2 of 4 nodes failed\n");
  CHECK(d.requests().size() == 4);
  CHECK(d.requests().front() == R"(POST /api/v1/nodes/node0/power {"action":"cycle"})");
}

TEST_CASE("node power stops at the first node when provisiond cannot be reached") {
  CurlGlobal curl;
  std::vector<const char*> args = {"provisionctl", "--url", "http://127.0.0.1:1", "node",
                                   "power",        "on",    "node[0-9]"};
  std::istringstream in;
  std::ostringstream out, err;
  int status = RunCli(static_cast<int>(args.size()), args.data(), {in, out, err, false});
  CHECK(status == kExitFailed);
  CHECK(err.str().find("cannot reach") == err.str().rfind("cannot reach"));
  CHECK(err.str().find("node0") == std::string::npos);  // not a node's failure
}

TEST_CASE("node set --power sends the driver as a JSON object") {
  CurlGlobal curl;
  FakeDaemon d;
  d.Add("PATCH", "/api/v1/nodes/{node}", [](const HttpRequest& r) {
    return HttpResponse::Json(200, {{"hostname", r.Param("node")},
                                    {"state", "enrolled"},
                                    {"power", json::parse(r.body)["power"]}});
  });
  Run r = d.Cli({"node", "set", "node4", "--power", "driver=ipmi,address=10.0.0.104"});
  CHECK(r.status == kExitOk);
  CHECK(r.out == "node4: enrolled, no profile, power ipmi,address=10.0.0.104\n");
  r = d.Cli({"node", "set", "node[0-1]", "--power", "wol"});
  CHECK(r.status == kExitOk);
  r = d.Cli({"node", "set", "node0", "--power", "none"});
  CHECK(r.out == "node0: enrolled, no profile\n");
  const auto requests = d.requests();
  REQUIRE(requests.size() == 4);
  CHECK(requests[0] ==
        R"(PATCH /api/v1/nodes/node4 {"power":{"address":"10.0.0.104","driver":"ipmi"}})");
  CHECK(requests[1] == R"(PATCH /api/v1/nodes/node0 {"power":{"driver":"wol"}})");
  CHECK(requests[3] == R"(PATCH /api/v1/nodes/node0 {"power":{}})");
}

TEST_CASE("node add --power enrolls the node with its driver in one request") {
  CurlGlobal curl;
  FakeDaemon d;
  d.Add("POST", "/api/v1/nodes", [](const HttpRequest& r) {
    json body = json::parse(r.body);
    return HttpResponse::Json(
        201, {{"hostname", body["hostname"]}, {"mac", body["mac"]}, {"power", body["power"]}});
  });
  Run r = d.Cli({"node", "add", "lab1", "--mac", "52:54:00:99:00:11", "--power", "command"});
  CHECK(r.status == kExitOk);
  CHECK(r.out == "enrolled lab1 (52:54:00:99:00:11), power command\n");
  REQUIRE(d.requests().size() == 1);
  CHECK(
      d.requests()[0] ==
      R"(POST /api/v1/nodes {"hostname":"lab1","mac":"52:54:00:99:00:11","power":{"driver":"command"}})");
}

// Which drivers exist and what each needs is provisiond's (power/registry.h):
// provisionctl sends any well-formed spec and prints the daemon's answer.
TEST_CASE("--power: a driver or setting provisiond does not know is its error, printed") {
  CurlGlobal curl;
  FakeDaemon d;
  d.Add("POST", "/api/v1/nodes", [](const HttpRequest&) {
    return HttpResponse::Error(400, "unknown power driver 'plug' (wol, ipmi or command)");
  });
  d.Add("PATCH", "/api/v1/nodes/{node}", [](const HttpRequest&) {
    return HttpResponse::Error(400, "the ipmi power driver needs 'address' (the BMC's address)");
  });
  Run r = d.Cli({"node", "add", "n0", "--mac", "52:54:00:99:00:20", "--power", "plug"});
  CHECK(r.status == kExitFailed);
  CHECK(r.err == "provisionctl: unknown power driver 'plug' (wol, ipmi or command)\n");
  r = d.Cli({"node", "set", "n0", "--power", "driver=ipmi"});
  CHECK(r.status == kExitFailed);
  CHECK(r.err.find("n0: the ipmi power driver needs 'address' (the BMC's address)") !=
        std::string::npos);
  const auto requests = d.requests();
  REQUIRE(requests.size() == 2);
  CHECK(
      requests[0] ==
      R"(POST /api/v1/nodes {"hostname":"n0","mac":"52:54:00:99:00:20","power":{"driver":"plug"}})");
  CHECK(requests[1] == R"(PATCH /api/v1/nodes/n0 {"power":{"driver":"ipmi"}})");
}

TEST_CASE("node show asks for the node's last 20 events by its MAC") {
  CurlGlobal curl;
  FakeDaemon d;
  d.Add("GET", "/api/v1/nodes/{node}", [](const HttpRequest&) {
    return HttpResponse::Json(
        200, {{"hostname", "node0"}, {"mac", "52:54:00:aa:00:00"}, {"state", "enrolled"}});
  });
  d.Add("GET", "/api/v1/events", [](const HttpRequest&) {
    return HttpResponse::Json(200, {{"events", json::array()}, {"next", 0}});
  });
  Run r = d.Cli({"node", "show", "node0"});
  CHECK(r.status == kExitOk);
  REQUIRE(d.requests().size() == 2);
  CHECK(d.requests()[1] == "GET /api/v1/events?last=20&node=52:54:00:aa:00:00");
}

}  // namespace prov::ctl

namespace prov::ctl {

TEST_CASE("node storage wipe: three words, the disks sent, a confirmation asked for") {
  CurlGlobal curl;
  FakeDaemon d;
  d.Add("POST", "/api/v1/nodes/{node}/storage/wipe", [](const HttpRequest& r) {
    return HttpResponse::Json(200, {{"hostname", r.Param("node")}});
  });
  Run r = d.Cli({"node", "storage", "wipe", "node1", "--disk", "virtio-data-1", "--yes"});
  CHECK(r.status == kExitOk);
  CHECK(r.out.find("node1: wipe allowed at its next boot (virtio-data-1)") == 0);
  r = d.Cli({"node", "storage", "wipe", "node1", "--yes"});
  CHECK(r.status == kExitOk);
  // Not a terminal and no --yes: nobody confirmed, nothing sent.
  r = d.Cli({"node", "storage", "wipe", "node1"});
  CHECK(r.status == kExitUsage);
  CHECK(r.err.find("pass --yes") != std::string::npos);
  const auto requests = d.requests();
  REQUIRE(requests.size() == 2);
  CHECK(requests[0] == R"(POST /api/v1/nodes/node1/storage/wipe {"disks":["virtio-data-1"]})");
  CHECK(requests[1] == R"(POST /api/v1/nodes/node1/storage/wipe {})");
  // A misspelt group is named with the nearest.
  r = d.Cli({"node", "storag", "wipe", "node1"});
  CHECK(r.status == kExitUsage);
  CHECK(r.err.find("did you mean 'node storage'?") != std::string::npos);
}

}  // namespace prov::ctl
