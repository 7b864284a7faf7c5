// Verbs against a fake provisiond: a Router with canned handlers behind a real
// HTTP server on a free loopback port, so what a verb sends and how it reads
// the replies (503s, 409s) is tested without the daemon.
#include <doctest/doctest.h>

#include <filesystem>
#include <mutex>
#include <sstream>
#include <vector>

#include "cli.h"
#include "client.h"
#include "commands.h"
#include "http/http_server.h"

namespace prov::ctl {
namespace {

using json = nlohmann::json;

struct Run {
  int status;
  std::string out;
  std::string err;
};

class FakeDaemon {
 public:
  FakeDaemon() : router_(std::make_shared<const TokenSet>()) {}

  // Serves `handler` for `method` `pattern`; every request is recorded as
  // "METHOD /path?query body".
  void Add(const std::string& method, const std::string& pattern,
           std::function<HttpResponse(const HttpRequest&)> handler) {
    router_.Add(method, pattern, Router::Access::kRead,
                [this, method, handler = std::move(handler)](const HttpRequest& r) {
                  std::string query;
                  for (const auto& [k, v] : r.query)
                    query += (query.empty() ? "?" : "&") + k + "=" + v;
                  {
                    std::lock_guard<std::mutex> lock(mu_);
                    requests_.push_back(method + " " + r.path + query +
                                        (r.body.empty() ? "" : " " + r.body));
                  }
                  return handler(r);
                });
  }

  Run Cli(std::vector<const char*> args) {
    if (!server_) {
      auto server = HttpServer::Start(HttpServerOptions{}, router_);
      REQUIRE(server.ok());
      server_ = std::move(*server);
      url_ = "http://127.0.0.1:" + std::to_string(server_->port());
    }
    args.insert(args.begin(), {"provisionctl", "--url", url_.c_str()});
    std::istringstream in;
    std::ostringstream out, err;
    int status = RunCli(static_cast<int>(args.size()), args.data(), {in, out, err, false});
    return {status, out.str(), err.str()};
  }

  std::vector<std::string> requests() {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }

 private:
  Router router_;
  std::unique_ptr<HttpServer> server_;  // after router_: stops before it goes
  std::string url_;
  std::mutex mu_;
  std::vector<std::string> requests_;  // guarded by mu_
};

}  // namespace

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

TEST_CASE("node add --power enrolls, then sets the driver") {
  CurlGlobal curl;
  FakeDaemon d;
  d.Add("POST", "/api/v1/nodes", [](const HttpRequest& r) {
    json body = json::parse(r.body);
    return HttpResponse::Json(201, {{"hostname", body["hostname"]}, {"mac", body["mac"]}});
  });
  d.Add("PATCH", "/api/v1/nodes/{node}", [](const HttpRequest& r) {
    return HttpResponse::Json(200, {{"power", json::parse(r.body)["power"]}});
  });
  Run r = d.Cli({"node", "add", "lab1", "--mac", "52:54:00:99:00:11", "--power", "command"});
  CHECK(r.status == kExitOk);
  CHECK(r.out == "enrolled lab1 (52:54:00:99:00:11), power command\n");
  REQUIRE(d.requests().size() == 2);
  CHECK(d.requests()[1] == R"(PATCH /api/v1/nodes/lab1 {"power":{"driver":"command"}})");
}

TEST_CASE("image import sends absolute paths and names the version") {
  CurlGlobal curl;
  FakeDaemon d;
  d.Add("POST", "/api/v1/images/{name}/import", [](const HttpRequest& r) {
    return HttpResponse::Json(201, {{"name", r.Param("name")},
                                    {"version", "0123456789abcdef"},
                                    {"ref", r.Param("name") + "@0123456789abcdef"},
                                    {"kernel_size", 2048},
                                    {"initrd_size", 3 << 20}});
  });
  Run r = d.Cli({"image", "import", "lab", "--kernel", "out/../vmlinuz", "--initrd", "/x/initrd"});
  CHECK(r.status == kExitOk);
  CHECK(r.out == "imported lab@0123456789abcdef (kernel 2.0 KiB, initrd 3.0 MiB)\n");
  const std::string cwd = std::filesystem::current_path().string();
  REQUIRE(d.requests().size() == 1);
  CHECK(d.requests()[0] ==
        "POST /api/v1/images/lab/import {\"initrd\":\"/x/initrd\",\"kernel\":\"" + cwd +
            "/vmlinuz\"}");
}

namespace {

// GET /events over `events` (each with an "id"), as provisiond answers it:
// those after ?after=, and the cursor.
HttpResponse EventsAfter(const json& events, const HttpRequest& r) {
  const int64_t after = std::stoll(r.query.count("after") ? r.query.at("after") : "0");
  json list = json::array();
  for (const auto& e : events)
    if (e["id"].get<int64_t>() > after) list.push_back(e);
  return HttpResponse::Json(
      200, {{"events", list}, {"next", list.empty() ? after : list.back()["id"].get<int64_t>()}});
}

json Event(int64_t id, int64_t time, const char* kind, const char* detail) {
  return {{"id", id},     {"time", time},     {"node", ""},
          {"kind", kind}, {"detail", detail}, {"who", "admin"}};
}

}  // namespace

TEST_CASE("image build follows its events from the cursor before the build until it ends") {
  CurlGlobal curl;
  FakeDaemon d;
  const json events = {
      Event(4, 500, "image-built", "lab: lab@00000000000000aa"),  // an earlier build
      Event(6, 1000, "image-build", "lab: started (debian bookworm, 9 packages)"),
      Event(7, 1200, "image-build", "other: started (debian bookworm, 1 packages)"),
      Event(8, 1300, "state", "enrolled -> booting"),
      Event(9, 13'345, "image-build", "lab: mmdebstrap: I: downloading packages with apt..."),
      Event(10, 13'400, "image-build-failed", "other: mirror cannot be reached"),
      Event(11, 186'000, "image-built", "lab: lab@0123456789abcdef"),
  };
  d.Add("GET", "/api/v1/status", [](const HttpRequest&) {
    return HttpResponse::Json(200, {{"last_event", 5}});
  });
  d.Add("POST", "/api/v1/images/{name}/build", [](const HttpRequest& r) {
    return HttpResponse::Json(202, {{"image", r.Param("name")}, {"building", true}});
  });
  d.Add("GET", "/api/v1/events",
        [&events](const HttpRequest& r) { return EventsAfter(events, r); });
  Run r = d.Cli({"image", "build", "lab"});
  CHECK(r.status == kExitOk);
  CHECK(r.out ==
        "[  0.0s] started (debian bookworm, 9 packages)\n"
        "[ 12.3s] mmdebstrap: I: downloading packages with apt...\n"
        "built lab@0123456789abcdef in 3m05s\n");
  CHECK(r.err.empty());
  const auto requests = d.requests();
  REQUIRE(requests.size() == 3);
  CHECK(requests[0] == "GET /api/v1/status");
  CHECK(requests[1] == "POST /api/v1/images/lab/build");
  CHECK(requests[2] == "GET /api/v1/events?after=5&wait=25");
}

TEST_CASE("image build prints why a build failed and exits 1") {
  CurlGlobal curl;
  FakeDaemon d;
  const json events = {
      Event(1, 1000, "image-build", "bad: started (debian bookworm, 1 packages)"),
      Event(2, 1100, "image-build-failed",
            "bad: mmdebstrap failed (exit 1):\nE: cannot download\nE: giving up"),
  };
  d.Add("GET", "/api/v1/status", [](const HttpRequest&) {
    return HttpResponse::Json(200, {{"last_event", 0}});
  });
  d.Add("POST", "/api/v1/images/{name}/build", [](const HttpRequest& r) {
    if (r.Param("name") == "busy")
      return HttpResponse::Error(409, "image busy is being built already");
    if (r.Param("name") != "bad")
      return HttpResponse::Error(404, "no image manifest '" + r.Param("name") + "'");
    return HttpResponse::Json(202, {{"image", "bad"}, {"building", true}});
  });
  d.Add("GET", "/api/v1/events",
        [&events](const HttpRequest& r) { return EventsAfter(events, r); });
  Run r = d.Cli({"image", "build", "bad"});
  CHECK(r.status == kExitFailed);
  CHECK(r.out == "[  0.0s] started (debian bookworm, 1 packages)\n");
  CHECK(r.err ==
        "provisionctl: image bad was not built: mmdebstrap failed (exit 1):\n"
        "  E: cannot download\n"
        "  E: giving up\n");

  r = d.Cli({"image", "build", "busy"});
  CHECK(r.status == kExitFailed);
  CHECK(r.err.find("provisionctl: image busy is being built already\n") == 0);
  r = d.Cli({"image", "build", "nosuch"});
  CHECK(r.status == kExitFailed);
  CHECK(r.err == "provisionctl: no image manifest 'nosuch'\n");
  r = d.Cli({"image", "build", "a/b"});
  CHECK(r.status == kExitUsage);

  // --no-follow: the build, and nothing else.
  const size_t before = d.requests().size();
  r = d.Cli({"image", "build", "bad", "--no-follow"});
  CHECK(r.status == kExitOk);
  CHECK(r.out.find("building bad in provisiond: ") == 0);
  REQUIRE(d.requests().size() == before + 1);
  CHECK(d.requests().back() == "POST /api/v1/images/bad/build");
}

TEST_CASE("image show NAME@VERSION asks what NAME stands for") {
  CurlGlobal curl;
  FakeDaemon d;
  d.Add("GET", "/api/v1/images/{ref}", [](const HttpRequest& r) {
    const std::string ref = r.Param("ref");
    const std::string version = ref == "lab" ? "ffff" : ref.substr(ref.find('@') + 1);
    return HttpResponse::Json(
        200, {{"name", "lab"}, {"version", version}, {"ref", "lab@" + version}, {"root", false}});
  });
  Run r = d.Cli({"image", "show", "lab@00aa"});
  CHECK(r.status == kExitOk);
  CHECK(r.out.find("image:   lab@00aa\ncurrent: no (lab stands for lab@ffff)\n") == 0);
  REQUIRE(d.requests().size() == 2);
  CHECK(d.requests()[0] == "GET /api/v1/images/lab@00aa");
  CHECK(d.requests()[1] == "GET /api/v1/images/lab");
  r = d.Cli({"image", "show", "lab"});
  CHECK(r.out.find("current: yes") != std::string::npos);
  CHECK(d.requests().size() == 3);  // a bare name is what it stands for
  r = d.Cli({"image", "show", "lab@"});
  CHECK(r.status == kExitUsage);
}

TEST_CASE("image verify exits 1 when the image cannot be served") {
  CurlGlobal curl;
  FakeDaemon d;
  d.Add("POST", "/api/v1/images/{ref}/verify", [](const HttpRequest& r) {
    const bool good = r.Param("ref") == "good";
    return HttpResponse::Json(200, {{"image", r.Param("ref") + "@01"},
                                    {"kernel", true},
                                    {"initrd", true},
                                    {"root", true},
                                    {"nfs", good ? "os-release read back over NFS" : "timed out"},
                                    {"root_args", "root=/dev/nfs"},
                                    {"ok", good}});
  });
  Run r = d.Cli({"image", "verify", "good"});
  CHECK(r.status == kExitOk);
  CHECK(r.out.find("good@01 can be served\n") != std::string::npos);
  r = d.Cli({"image", "verify", "bad"});
  CHECK(r.status == kExitFailed);
  CHECK(r.out.find("FAIL  nfs     timed out\n") != std::string::npos);
  r = d.Cli({"image", "verify", "bad", "--json"});
  CHECK(r.status == kExitFailed);
  CHECK(json::parse(r.out)["ok"] == false);
}

TEST_CASE("image rm removes the version it resolved, and says what the name stands for now") {
  CurlGlobal curl;
  FakeDaemon d;
  bool removed = false;
  d.Add("GET", "/api/v1/images/{ref}", [&removed](const HttpRequest& r) {
    if (r.Param("ref") == "lab" && removed)
      return HttpResponse::Error(404, "image 'lab' has not been built or imported");
    const std::string ref = r.Param("ref");
    const std::string version = ref == "lab" ? "0a" : ref.substr(ref.find('@') + 1);
    return HttpResponse::Json(200,
                              {{"name", "lab"}, {"version", version}, {"ref", "lab@" + version}});
  });
  d.Add("DELETE", "/api/v1/images/{ref}", [&removed](const HttpRequest& r) {
    if (r.Param("ref") == "lab@0b")
      return HttpResponse::Error(409, "image lab@0b is used by profile lab; apply another first");
    removed = true;
    return HttpResponse::Json(200, {{"removed", r.Param("ref")}});
  });
  Run r = d.Cli({"image", "rm", "lab"});
  CHECK(r.status == kExitOk);
  CHECK(r.out ==
        "removed lab@0a\n"
        "lab stands for no version until the next 'provisionctl image build lab' or import\n");
  const auto requests = d.requests();
  REQUIRE(requests.size() == 3);
  CHECK(requests[0] == "GET /api/v1/images/lab");
  CHECK(requests[1] == "DELETE /api/v1/images/lab@0a");
  CHECK(requests[2] == "GET /api/v1/images/lab");

  removed = false;
  r = d.Cli({"image", "rm", "lab@0b"});  // not the current version (0a is), and refused
  CHECK(r.status == kExitFailed);
  CHECK(r.out.empty());
  CHECK(r.err == "provisionctl: image lab@0b is used by profile lab; apply another first\n");
}

TEST_CASE("preflight exits 1 when a check fails, and explains a daemon without a boot network") {
  CurlGlobal curl;
  bool configured = true;  // before the daemon, which reads it
  FakeDaemon d;
  d.Add("GET", "/api/v1/preflight", [&configured](const HttpRequest&) {
    if (!configured)
      return HttpResponse::Error(409,
                                 "no 'interface' is configured: provisiond serves no boot network");
    return HttpResponse::Json(200, json::parse(R"js({"ok": false, "checks": [
          {"name": "interface", "ok": true, "fatal": false, "detail": "br0 has 10.99.0.1/24"},
          {"name": "dnsmasq", "ok": false, "fatal": true, "detail": "missing"}]})js"));
  });
  Run r = d.Cli({"preflight"});
  CHECK(r.status == kExitFailed);
  CHECK(r.out.find("ok    interface  br0 has 10.99.0.1/24\n") == 0);
  configured = false;
  r = d.Cli({"preflight"});
  CHECK(r.status == kExitFailed);
  CHECK(r.out.empty());
  CHECK(r.err.find("provisionctl: no 'interface' is configured: provisiond serves no boot "
                   "network\nprovisionctl: there is no boot network to check; set 'interface'") ==
        0);
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
