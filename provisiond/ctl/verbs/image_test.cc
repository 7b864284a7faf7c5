// The image verbs against a fake provisiond: imports, following a build
// through its events, show, verify and rm.
#include <doctest/doctest.h>

#include <filesystem>

#include "../client.h"
#include "../testing/fake_daemon.h"
#include "../verb.h"

namespace prov::ctl {

using json = nlohmann::json;

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

}  // namespace prov::ctl
