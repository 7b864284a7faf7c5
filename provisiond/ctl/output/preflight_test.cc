#include "preflight.h"

#include <doctest/doctest.h>

namespace prov::ctl {

using json = nlohmann::json;

TEST_CASE("preflight: ok or FAIL, name, detail; then what failed") {
  json reply = json::parse(R"js({"ok": false, "checks": [
    {"name": "interface", "ok": true, "fatal": false, "detail": "br0 has 10.99.0.1/24"},
    {"name": "dhcp range", "ok": false, "fatal": false, "detail": "10.99.0.2-10.99.0.3: too small"},
    {"name": "dnsmasq", "ok": false, "fatal": true, "detail": "/usr/sbin/dnsmasq is missing"}]})js");
  CHECK(RenderPreflight(reply) ==
        "ok    interface   br0 has 10.99.0.1/24\n"
        "FAIL  dhcp range  10.99.0.2-10.99.0.3: too small\n"
        "FAIL  dnsmasq     /usr/sbin/dnsmasq is missing\n"
        "2 of 3 checks failed; provisiond would not start with dnsmasq failing\n");
  reply["checks"].erase(1);
  reply["checks"].erase(1);
  reply["ok"] = true;
  CHECK(RenderPreflight(reply) ==
        "ok    interface  br0 has 10.99.0.1/24\n"
        "all 1 checks passed\n");
}

TEST_CASE("the preflight renderer takes missing fields as unknown rather than failing") {
  CHECK_NOTHROW(RenderPreflight(json::object()));
  CHECK_NOTHROW(RenderPreflight(json::parse(R"js({"checks": [{}]})js")));
}

}  // namespace prov::ctl
