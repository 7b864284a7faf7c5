// JSON bodies of the API's requests: the first byte picks the request, the
// rest is its body, sent with the right credentials (the admin token, or node
// n0's own token for its phone-home) so the handlers get past authentication
// and parse it. The body is also checked as hardware facts against every
// shipped profile, as a hello does, and every export format is rendered
// from what the request left in the inventory.
#include <cstdint>
#include <map>
#include <string>

#include "api/exports.h"
#include "fuzz_util.h"
#include "profiles/hardware_check.h"
#include "profiles/profile.h"

namespace {

struct Request {
  const char* method;
  const char* path;
  bool node_token;
};

const Request kRequests[] = {
    {"POST", "/api/v1/nodes", false},
    {"PATCH", "/api/v1/nodes/n0", false},
    {"POST", "/api/v1/nodes/52:54:00:00:00:01/hello", true},
    {"POST", "/api/v1/nodes/52:54:00:00:00:01/report", true},
    {"POST", "/api/v1/profiles/lab/apply", false},
    {"POST", "/api/v1/profiles/v0.1/apply", false},
    {"DELETE", "/api/v1/nodes/n0", false},
    {"POST", "/api/v1/nodes/n1/hello", true},
};

const std::map<std::string, prov::Profile>& Profiles() {
  static const auto profiles = [] {
    std::vector<std::string> errors;
    return prov::LoadAllProfiles(PROVISION_SOURCE_DIR "/profiles",
                                 PROVISION_SOURCE_DIR "/playbooks", errors);
  }();
  return profiles;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1 || size > 64 * 1024) return 0;
  const Request& req = kRequests[data[0] % std::size(kRequests)];
  std::string body(reinterpret_cast<const char*>(data + 1), size - 1);

  // Straight through the body parser every write uses.
  auto parsed = prov::ParseJsonObject(body, {"hostname", "mac", "ip", "profile", "power"});
  if (parsed.ok()) FUZZ_CHECK(parsed->is_object(), body);

  prov::fuzz::ApiHarness& api = prov::fuzz::ApiHarness::Fresh();
  prov::HttpRequest r;
  r.method = req.method;
  r.path = req.path;
  r.remote = "10.99.0.10";
  r.tls = true;  // as over the HTTPS listener: API routes answer off loopback there
  r.headers["authorization"] =
      std::string("Bearer ") + (req.node_token ? api.node_token() : prov::fuzz::kAdminToken);
  r.body = body;
  prov::HttpResponse response = api.Handle(r);
  prov::fuzz::CheckResponse(r, response);

  // The exports read the facts a hello stored.
  for (const char* format : {"hostfile", "hostfile-ip", "ansible-inventory", "slurm-nodes"})
    (void)prov::Export(format, api.inventory().store().ListNodes());

  auto facts = nlohmann::json::parse(body, nullptr, false);
  if (!facts.is_discarded() && facts.is_object()) {
    for (const auto& [version, profile] : Profiles()) {
      prov::Status s = prov::CheckHardware(profile, facts);
      (void)s;
    }
    (void)prov::Accelerators(facts);
  }
  return 0;
}
