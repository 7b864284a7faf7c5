// preflight against a fake provisiond, with and without a boot network.
#include <doctest/doctest.h>

#include "../client.h"
#include "../testing/fake_daemon.h"
#include "../verb.h"

namespace prov::ctl {

using json = nlohmann::json;

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

}  // namespace prov::ctl
