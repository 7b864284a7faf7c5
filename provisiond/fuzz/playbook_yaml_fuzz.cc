// The playbook loader (playbook.cc): plays, tasks, handlers, module
// arguments, the template syntax of every string, and template/copy sources
// looked up next to the shipped playbooks. A playbook that loads has its
// plays' host patterns matched as the runner does.
#include <cstdint>
#include <string>

#include "fuzz_util.h"
#include "playbook/playbook.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 64 * 1024) return 0;
  std::string text(reinterpret_cast<const char*>(data), size);
  auto playbook = prov::ParsePlaybook(text, PROVISION_SOURCE_DIR "/playbooks/fuzz.yml");
  if (!playbook.ok()) {
    FUZZ_CHECK(!playbook.status().message().empty(), text);
    return 0;
  }
  for (const auto& play : playbook->plays) {
    (void)prov::HostsMatch(play.hosts, "n0");
    (void)prov::HostsMatch(play.hosts, "lab01");
  }
  return 0;
}
