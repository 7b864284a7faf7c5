// The shipped slurm.yml templates (slurm.conf, gres.conf) rendered by the
// native runner's Jinja from recorded phone-home facts, with the variables the
// shipped profiles give them: what seed 003's three RTX 5090 workstations, an
// Intel Arc node and an AMD Ryzen AI node get. (The same templates under
// Ansible: tests/integration/playbook_syntax_test.sh.)
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>

#include "configure/node_vars.h"
#include "playbook/jinja/jinja.h"
#include "profiles/profile.h"

namespace prov {
namespace {

using nlohmann::json;

std::string ReadShipped(const std::string& rel) {
  std::ifstream in(std::string(PROVISION_SOURCE_DIR) + "/" + rel);
  REQUIRE_MESSAGE(in.good(), rel);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

NodeRecord FactsNode(int64_t id, const std::string& name, const json& facts) {
  NodeRecord n;
  n.id = id;
  n.hostname = name;
  n.mac = "52:54:00:00:01:0" + std::to_string(id);
  n.ip = "10.0.0." + std::to_string(10 + id);
  n.profile_version = "test";
  n.facts = facts.dump();
  return n;
}

json Pci(const std::string& slot, const std::string& ids, const std::string& cls,
         const std::string& device) {
  return {{"slot", slot},
          {"vendor_id", ids.substr(0, 4)},
          {"device_id", ids.substr(5)},
          {"class", cls},
          {"device", device},
          {"driver", ""}};
}

// Seed 003's workstation: Core Ultra 9 285K (24 threads, its own Intel
// graphics), 128 GB, one RTX 5090 and the card's audio function.
json Rtx5090Workstation() {
  return {{"cpu", {{"threads", 24}, {"cores", 24}}},
          {"memory_bytes", 133143986176LL},
          {"pci",
           json::array({Pci("0000:00:02.0", "8086:7d67", "0300", "Arrow Lake-S [Intel Graphics]"),
                        Pci("0000:01:00.0", "10de:2b85", "0300", "GB202 [GeForce RTX 5090]"),
                        Pci("0000:01:00.1", "10de:22e8", "0403",
                            "GB202 High Definition Audio Controller")})}};
}

// The slurm.yml vars a shipped profile gives, with the controller as
// slurm.yml sets it.
json SlurmVars(const std::string& version) {
  auto p =
      LoadProfile(PROVISION_SOURCE_DIR "/profiles", version, PROVISION_SOURCE_DIR "/playbooks");
  REQUIRE_MESSAGE(p.ok(), p.status().message());
  for (const auto& ref : p->playbooks)
    if (ref.file == "slurm.yml") return ref.vars;
  FAIL("profile " << version << " has no slurm.yml");
  return {};
}

std::string Render(const std::string& tpl, const std::vector<NodeRecord>& nodes, json extra) {
  NodeVarsBuilder builder("ssh-ed25519 AAAA control");
  json vars = builder.For(nodes[0], nodes);
  for (auto& [k, v] : extra.items()) vars[k] = v;
  if (!vars.contains("slurm_ctl"))
    vars["slurm_ctl"] = vars.value("slurm_controller", nodes[0].name());
  auto out = RenderTemplateFile(ReadShipped("playbooks/templates/" + tpl), vars, tpl);
  REQUIRE_MESSAGE(out.ok(), out.status().message());
  return *out;
}

bool HasLine(const std::string& text, const std::string& line) {
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);)
    if (l == line) return true;
  return false;
}

}  // namespace

TEST_CASE("slurm templates: seed 003's three RTX 5090 workstations (profile nvidia-slurm)") {
  std::vector<NodeRecord> nodes = {FactsNode(1, "node0", Rtx5090Workstation()),
                                   FactsNode(2, "node1", Rtx5090Workstation()),
                                   FactsNode(3, "node2", Rtx5090Workstation())};
  json vars = SlurmVars("nvidia-slurm");
  vars.erase("munge_key_b64");  // a secret reference; the templates do not read it
  const std::string conf = Render("slurm.conf.j2", nodes, vars);
  INFO(conf);
  CHECK(HasLine(conf, "ClusterName=rtx5090"));
  CHECK(HasLine(conf, "SlurmctldHost=node0(10.0.0.11)"));
  CHECK(HasLine(conf, "GresTypes=gpu"));
  // 133143986176 bytes = 126976 MiB; 95% of it.
  CHECK(HasLine(conf,
                "NodeName=node0 NodeAddr=10.0.0.11 CPUs=24 RealMemory=120627 Gres=gpu:rtx_5090:1 "
                "State=UNKNOWN"));
  CHECK(HasLine(conf,
                "NodeName=node1 NodeAddr=10.0.0.12 CPUs=24 RealMemory=120627 Gres=gpu:rtx_5090:1 "
                "State=UNKNOWN"));
  CHECK(HasLine(conf,
                "NodeName=node2 NodeAddr=10.0.0.13 CPUs=24 RealMemory=120627 Gres=gpu:rtx_5090:1 "
                "State=UNKNOWN"));
  CHECK(HasLine(conf, "PartitionName=gpu Nodes=ALL Default=YES MaxTime=INFINITE State=UP"));
  const std::string gres = Render("gres.conf.j2", nodes, vars);
  INFO(gres);
  for (const char* n : {"node0", "node1", "node2"})
    CHECK(
        HasLine(gres, std::string("NodeName=") + n + " Name=gpu Type=rtx_5090 File=/dev/nvidia0"));
  // The processor's own graphics and the card's audio are not Slurm GPUs.
  CHECK(gres.find("Arrow") == std::string::npos);
  CHECK(gres.find("/dev/dri") == std::string::npos);
  CHECK(gres.find("/dev/nvidia1") == std::string::npos);
}

TEST_CASE("slurm templates: an Intel Arc node and an AMD Ryzen AI node, by render node") {
  json arc = {
      {"cpu", {{"threads", 16}}},
      {"memory_bytes", 67108864000LL},
      {"pci", json::array({Pci("0000:03:00.0", "8086:56a0", "0300", "DG2 [Arc A770]"),
                           Pci("0000:04:00.0", "8086:4f90", "0403", "DG2 Audio Controller")})}};
  json amd = {
      {"cpu", {{"threads", 24}}},
      {"memory_bytes", 0},
      {"pci", json::array({Pci("0000:c4:00.0", "1002:150e", "0300", "Strix [Radeon 880M / 890M]"),
                           Pci("0000:c5:00.1", "1022:17f0", "1180",
                               "Strix/Krackan/Strix Halo Neural Processing Unit")})}};
  json none = {{"cpu", {{"threads", 4}}}, {"memory_bytes", 8589934592LL}};
  std::vector<NodeRecord> nodes = {FactsNode(1, "arc0", arc), FactsNode(2, "amd0", amd),
                                   FactsNode(3, "cpu0", none)};
  json vars = {{"slurm_cluster_name", "mixed"}};
  const std::string conf = Render("slurm.conf.j2", nodes, vars);
  INFO(conf);
  CHECK(HasLine(conf,
                "NodeName=arc0 NodeAddr=10.0.0.11 CPUs=16 RealMemory=60800 Gres=gpu:arc_a770:1 "
                "State=UNKNOWN"));
  // No memory reported: no RealMemory (slurmd's own count stands).
  CHECK(HasLine(
      conf, "NodeName=amd0 NodeAddr=10.0.0.12 CPUs=24 Gres=gpu:radeon_880m_890m:1 State=UNKNOWN"));
  CHECK(HasLine(conf, "NodeName=cpu0 NodeAddr=10.0.0.13 CPUs=4 RealMemory=7782 State=UNKNOWN"));
  const std::string gres = Render("gres.conf.j2", nodes, vars);
  INFO(gres);
  CHECK(HasLine(
      gres, "NodeName=arc0 Name=gpu Type=arc_a770 File=/dev/dri/by-path/pci-0000:03:00.0-render"));
  CHECK(HasLine(gres,
                "NodeName=amd0 Name=gpu Type=radeon_880m_890m "
                "File=/dev/dri/by-path/pci-0000:c4:00.0-render"));
  CHECK(gres.find("cpu0") == std::string::npos);
  CHECK(gres.find("Neural") == std::string::npos);
}

TEST_CASE("slurm templates: several GPU models on one node are counted per type") {
  json mixed = {
      {"cpu", {{"threads", 64}}},
      {"pci", json::array({Pci("0000:41:00.0", "10de:2330", "0302", "GH100 [H100 SXM5 80GB]"),
                           Pci("0000:01:00.0", "10de:2b85", "0300", "GB202 [GeForce RTX 5090]"),
                           Pci("0000:81:00.0", "10de:2330", "0302", "GH100 [H100 SXM5 80GB]"),
                           Pci("0000:c1:00.0", "10de:2bff", "0302", "Device 2bff")})}};
  std::vector<NodeRecord> nodes = {FactsNode(1, "big0", mixed)};
  const std::string conf = Render("slurm.conf.j2", nodes, json::object());
  INFO(conf);
  CHECK(HasLine(conf,
                "NodeName=big0 NodeAddr=10.0.0.11 CPUs=64 "
                "Gres=gpu:rtx_5090:1,gpu:h100_sxm5_80gb:2,gpu:10de_2bff:1 State=UNKNOWN"));
  const std::string gres = Render("gres.conf.j2", nodes, json::object());
  INFO(gres);
  // /dev/nvidiaN in PCI order.
  CHECK(HasLine(gres, "NodeName=big0 Name=gpu Type=rtx_5090 File=/dev/nvidia0"));
  CHECK(HasLine(gres, "NodeName=big0 Name=gpu Type=h100_sxm5_80gb File=/dev/nvidia1"));
  CHECK(HasLine(gres, "NodeName=big0 Name=gpu Type=h100_sxm5_80gb File=/dev/nvidia2"));
  CHECK(HasLine(gres, "NodeName=big0 Name=gpu Type=10de_2bff File=/dev/nvidia3"));
}

TEST_CASE("slurm templates: an H100 as its node reported it, with no PCI names (recorded)") {
  // provision-facts on a machine with one H100 and no PCI ID database
  // (2026-11-24): the GPU's name is empty. nvidia-smi there: "GPU 0: NVIDIA
  // H100 80GB HBM3", bus 00000000:00:06.0; /dev/nvidia0 present.
  json h100 = {{"cpu", {{"cores", 16}, {"threads", 16}}},
               {"memory_bytes", 135148564480LL},
               {"pci", json::array({Pci("0000:00:03.0", "1af4:1041", "0200", ""),
                                    Pci("0000:00:06.0", "10de:2330", "0302", "")})}};
  std::vector<NodeRecord> nodes = {FactsNode(1, "gpu0", h100)};
  const std::string conf = Render("slurm.conf.j2", nodes, json::object());
  INFO(conf);
  CHECK(HasLine(conf,
                "NodeName=gpu0 NodeAddr=10.0.0.11 CPUs=16 RealMemory=122443 Gres=gpu:10de_2330:1 "
                "State=UNKNOWN"));
  const std::string gres = Render("gres.conf.j2", nodes, json::object());
  INFO(gres);
  CHECK(HasLine(gres, "NodeName=gpu0 Name=gpu Type=10de_2330 File=/dev/nvidia0"));
}

}  // namespace prov
