// The profile loader (profile.cc); a profile that loads also renders to
// JSON. The playbooks it names are read and parsed as provisiond does, from a
// directory that holds a one-line playbook under each shipped playbook's
// name: parsing the real ones again for every input took most of the time
// (about 140 inputs/s) and explores nothing the playbook_yaml target, whose
// seeds are the shipped playbooks, does not.
#include <cstdint>
#include <filesystem>
#include <string>

#include "base/file_util.h"
#include "base/temp_dir.h"
#include "fuzz_util.h"
#include "profiles/profile.h"
#include "yaml_value.h"

namespace {

const std::string& StubPlaybooks() {
  static prov::TempDir dir("fuzz-playbooks");
  static bool made = [] {
    namespace fs = std::filesystem;
    const fs::path shipped = PROVISION_SOURCE_DIR "/playbooks";
    for (const auto& e : fs::recursive_directory_iterator(shipped)) {
      const std::string ext = e.path().extension().string();
      if (!e.is_regular_file() || (ext != ".yml" && ext != ".yaml")) continue;
      const fs::path stub = fs::path(dir.path()) / fs::relative(e.path(), shipped);
      fs::create_directories(stub.parent_path());
      (void)prov::WriteFileAtomic(stub.string(), "- hosts: all\n  tasks: []\n");
    }
    return true;
  }();
  (void)made;
  return dir.path();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 64 * 1024) return 0;
  std::string text(reinterpret_cast<const char*>(data), size);
  std::string version = prov::fuzz::TopLevelValue(text, "version");
  auto profile = prov::ParseProfile(text, "profiles/x/profile.yaml", version, StubPlaybooks());
  if (profile.ok())
    (void)prov::ToJson(*profile).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  else
    FUZZ_CHECK(!profile.status().message().empty(), text);
  return 0;
}
