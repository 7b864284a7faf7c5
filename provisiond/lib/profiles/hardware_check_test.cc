#include "profiles/hardware_check.h"

#include <doctest/doctest.h>

namespace prov {
namespace {

Profile ArcProfile() {
  Profile p;
  p.version = "v0.1";
  p.accelerators.push_back({"intel", "Arc A770", {"8086:56a0"}, 1});
  p.min_memory_gib = 16;
  return p;
}

nlohmann::json Facts(
    std::vector<std::tuple<std::string, std::string, std::string, std::string>> devices,
    uint64_t gib = 32) {
  nlohmann::json pci = nlohmann::json::array();
  for (auto& [vendor, device, klass, name] : devices)
    pci.push_back(
        {{"vendor_id", vendor}, {"device_id", device}, {"class", klass}, {"device", name}});
  return {{"pci", pci}, {"memory_bytes", gib << 30}};
}

}  // namespace

TEST_CASE("hardware check: the profile's accelerators against the node's PCI devices") {
  struct Case {
    const char* name;
    nlohmann::json facts;
    bool ok;
    const char* message;
  };
  const Case cases[] = {
      {"one A770",
       Facts({{"8086", "56a0", "0300", "DG2 [Arc A770]"}, {"8086", "7a06", "0601", "LPC"}}), true,
       ""},
      {"no GPU", Facts({{"8086", "7a06", "0601", "LPC"}}), false,
       "expected 1 x intel Arc A770 (8086:56a0), found 0; GPUs and accelerators seen: none"},
      {"an RTX instead", Facts({{"10de", "2c02", "0300", "GB203 [GeForce RTX 5080]"}}), false,
       "found 0; GPUs and accelerators seen: 10de:2c02 GB203 [GeForce RTX 5080]"},
      {"two A770", Facts({{"8086", "56a0", "0300", "A770"}, {"8086", "56a0", "0300", "A770"}}),
       false, "found 2"},
      {"too little memory", Facts({{"8086", "56a0", "0300", "A770"}}, 8), false,
       "expected at least 16 GiB of memory, found 8 GiB"},
  };
  Profile p = ArcProfile();
  for (const auto& c : cases) {
    INFO(c.name);
    Status s = CheckHardware(p, c.facts);
    CHECK(s.ok() == c.ok);
    if (!c.ok) CHECK_MESSAGE(s.message().find(c.message) != std::string::npos, s.message());
  }
  Profile none;
  CHECK(CheckHardware(none, Facts({})).ok());
}

TEST_CASE("hardware check: by vendor and model name when no PCI ids are given; NPUs count") {
  Profile p;
  p.accelerators.push_back({"amd", "NPU", {}, 1});
  CHECK(CheckHardware(p, Facts({{"1022", "17f0", "1180", "Strix/Krackan NPU"}})).ok());
  CHECK_FALSE(CheckHardware(p, Facts({{"1022", "17f0", "0604", "NPU bridge"}})).ok());
}

}  // namespace prov

namespace prov {

// Found by fuzzing (json_bodies): a node's facts with fields of the wrong
// type made nlohmann's value() throw, and a hello answer 500.
TEST_CASE("hardware check: facts with fields of the wrong type read as missing") {
  const char* bad[] = {
      R"({"pci":"x","memory_bytes":"lots"})",
      R"({"pci":[1,[2],{"vendor_id":8086,"class":["0300"],"device":null}],"memory_bytes":-5})",
      R"({"pci":[{"vendor_id":"8086","device_id":3,"class":"0300"}],"memory_bytes":1e300})",
      R"({"memory_bytes":{"a":1}})",
  };
  for (const char* text : bad) {
    INFO(text);
    auto facts = nlohmann::json::parse(text);
    Status s = Status::Ok();
    CHECK_NOTHROW(s = CheckHardware(ArcProfile(), facts));
    CHECK_FALSE(s.ok());
    CHECK_NOTHROW(Accelerators(facts));
  }
  auto huge = nlohmann::json::parse(
      R"({"pci":[{"vendor_id":"8086","device_id":"56a0","class":"0300"}],"memory_bytes":1e300})");
  CHECK(CheckHardware(ArcProfile(), huge).ok());
}

}  // namespace prov
