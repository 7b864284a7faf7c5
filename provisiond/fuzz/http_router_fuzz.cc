// HTTP routing: a request as text ("METHOD TARGET\nname: value\n...\n\nbody")
// through the router and every in-process handler against a fresh in-memory
// store. NODETOKEN anywhere in the input stands for node n0's own token, so
// phone-home and overlay requests get past authentication.
#include <cctype>
#include <cstdint>
#include <string>

#include "fuzz_util.h"

namespace {

void Replace(std::string& s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 64 * 1024) return 0;
  prov::fuzz::ApiHarness& api = prov::fuzz::ApiHarness::Fresh();
  std::string text(reinterpret_cast<const char*>(data), size);
  Replace(text, "NODETOKEN", api.node_token());

  prov::HttpRequest r;
  r.remote = "10.99.0.10";
  r.tls = true;  // as over the HTTPS listener: API routes answer off loopback there
  size_t pos = 0;
  auto line = [&]() {
    size_t nl = text.find('\n', pos);
    std::string l = text.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
    pos = nl == std::string::npos ? text.size() : nl + 1;
    if (!l.empty() && l.back() == '\r') l.pop_back();
    return l;
  };
  std::string first = line();
  size_t sp = first.find(' ');
  r.method = first.substr(0, sp);
  std::string target = sp == std::string::npos ? "/" : first.substr(sp + 1);
  if (size_t v = target.find(" HTTP/"); v != std::string::npos) target.resize(v);
  prov::SplitTarget(target, r.path, r.query);
  while (pos < text.size()) {
    std::string h = line();
    if (h.empty()) break;
    size_t colon = h.find(':');
    if (colon == std::string::npos) continue;
    std::string name = h.substr(0, colon), value = h.substr(colon + 1);
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    while (!value.empty() && value.front() == ' ') value.erase(0, 1);
    r.headers[name] = value;
  }
  r.body = text.substr(pos);
  prov::HttpResponse response = api.Handle(r);
  prov::fuzz::CheckResponse(r, response);
  return 0;
}
