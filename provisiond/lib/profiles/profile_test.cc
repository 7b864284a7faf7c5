#include "profiles/profile.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>

#include "base/file_util.h"
#include "playbook/runner_choice.h"

namespace prov {
namespace {

// A playbooks directory with one playbook, for the parser to find.
std::string PlaybooksDir() {
  static std::string dir = [] {
    auto d = std::filesystem::temp_directory_path() /
             ("provision-profile-test-" + std::to_string(getpid()));
    std::filesystem::create_directories(d);
    REQUIRE(WriteFileAtomic((d / "a.yml").string(), "- hosts: all\n  tasks: []\n").ok());
    REQUIRE(WriteFileAtomic(
                (d / "bad.yml").string(),
                "- hosts: all\n  tasks:\n    - name: x\n      ansible.builtin.frobnicate: {}\n")
                .ok());
    return d.string();
  }();
  return dir;
}

const char* kGood = R"(version: v9
description: test
hardware:
  accelerators:
    - vendor: intel
      model: Arc A770
      pci_ids: ["8086:56A0"]
      count: 1
image:
  name: lab
kernel_args: [quiet]
playbooks:
  - playbook: a.yml
    vars:
      user: compute
      retries: 3
      quoted: "3"
      enabled: true
health_checks:
  - name: ok
    command: "true"
nodes:
  hostlist: node[0-3]
  macs: ["52:54:00:00:00:AA"]
)";

}  // namespace

TEST_CASE("profile: a good profile loads with its hash") {
  auto p = ParseProfile(kGood, "v9/profile.yaml", "v9", PlaybooksDir());
  REQUIRE_MESSAGE(p.ok(), p.status().message());
  CHECK(p->version == "v9");
  CHECK(p->accelerators.at(0).pci_ids.at(0) == "8086:56a0");
  CHECK(p->nodes.hostnames.size() == 4);
  CHECK(p->playbooks.at(0).vars["retries"] == 3);
  CHECK(p->playbooks.at(0).vars["quoted"] == "3");
  CHECK(p->playbooks.at(0).vars["enabled"] == true);
  CHECK(p->sha256.size() == 64);
  CHECK(p->Covers("node2", ""));
  CHECK(p->Covers("other", "52:54:00:00:00:aa"));
  CHECK_FALSE(p->Covers("node4", "52:54:00:00:00:01"));
  // The hash follows the content.
  auto q = ParseProfile(std::string(kGood) + "# comment\n", "f", "v9", PlaybooksDir());
  REQUIRE(q.ok());
  CHECK(q->sha256 != p->sha256);
}

TEST_CASE("profile: pattern selectors") {
  auto p = ParseProfile("version: lab\nimage: {name: lab}\nnodes: {pattern: 'lab*'}\n", "f", "lab",
                        PlaybooksDir());
  REQUIRE(p.ok());
  CHECK(p->Covers("lab0", ""));
  CHECK_FALSE(p->Covers("node0", ""));
}

TEST_CASE("profile: every broken file gets its own clear error with file:line:col") {
  struct Case {
    const char* name;
    const char* text;
    const char* error;
  };
  const Case cases[] = {
      {"syntax", "version: v9\nimage: [\n", "p.yaml:3:1: YAML syntax"},
      {"not a mapping", "- a\n", "p.yaml:1:1: profile must be a mapping"},
      {"missing version", "image: {name: x}\nnodes: {hostlist: n1}\n",
       "missing required key 'version'"},
      {"version mismatch", "version: v8\nimage: {name: x}\nnodes: {hostlist: n1}\n",
       "p.yaml:1:10: version 'v8' does not match its directory 'v9'"},
      {"unknown key", "version: v9\nimage: {name: x}\nnodes: {hostlist: n1}\nimages: x\n",
       "p.yaml:4:1: unknown key 'images' in profile"},
      {"unknown nested key", "version: v9\nimage: {name: x, tag: y}\nnodes: {hostlist: n1}\n",
       "p.yaml:2:18: unknown key 'tag' in 'image'"},
      {"missing image", "version: v9\nnodes: {hostlist: n1}\n", "missing required key 'image'"},
      {"missing nodes", "version: v9\nimage: {name: x}\n", "missing required key 'nodes'"},
      {"empty nodes", "version: v9\nimage: {name: x}\nnodes: {}\n",
       "'nodes' must name at least one of hostlist, macs or pattern"},
      {"bad hostlist", "version: v9\nimage: {name: x}\nnodes:\n  hostlist: node[3-1]\n",
       "p.yaml:4:13: hostlist 'node[3-1]': range '3-1' is reversed"},
      {"bad mac", "version: v9\nimage: {name: x}\nnodes:\n  macs: [52:54:00]\n",
       "p.yaml:4:9: MAC address '52:54:00' must have 12 hex digits"},
      {"bad vendor",
       "version: v9\nimage: {name: x}\nnodes: {hostlist: n1}\nhardware:\n  accelerators:\n"
       "    - {vendor: ati, model: X}\n",
       "p.yaml:6:16: vendor must be nvidia, amd or intel, found 'ati'"},
      {"bad count",
       "version: v9\nimage: {name: x}\nnodes: {hostlist: n1}\nhardware:\n  accelerators:\n"
       "    - {vendor: amd, model: X, count: 0}\n",
       "'count' must be between 1 and 64, found 0"},
      {"bad pci id",
       "version: v9\nimage: {name: x}\nnodes: {hostlist: n1}\nhardware:\n  accelerators:\n"
       "    - {vendor: amd, model: X, pci_ids: [10de]}\n",
       "PCI id '10de' must be vendor:device in hex"},
      {"missing playbook",
       "version: v9\nimage: {name: x}\nnodes: {hostlist: n1}\nplaybooks:\n"
       "  - playbook: nope.yml\n",
       "p.yaml:5:15: playbook 'nope.yml' not found"},
      {"escaping playbook",
       "version: v9\nimage: {name: x}\nnodes: {hostlist: n1}\nplaybooks:\n"
       "  - playbook: ../etc/passwd\n",
       "must be a path inside the playbooks directory"},
      {"vars not a mapping",
       "version: v9\nimage: {name: x}\nnodes: {hostlist: n1}\nplaybooks:\n"
       "  - playbook: a.yml\n    vars: [1]\n",
       "p.yaml:6:11: 'vars' must be a mapping"},
      {"relative overlay",
       "version: v9\nimage: {name: x}\nnodes: {hostlist: n1}\noverlay:\n"
       "  - {path: etc/motd, content: hi}\n",
       "overlay path 'etc/motd' must be absolute"},
      {"bad mode",
       "version: v9\nimage: {name: x}\nnodes: {hostlist: n1}\noverlay:\n"
       "  - {path: /etc/motd, content: hi, mode: rw}\n",
       "mode 'rw' must be octal"},
      {"health_hook of two lines",
       "version: v9\nimage: {name: x}\nnodes: {hostlist: n1}\nhealth_hook: \"a\\nb\"\n",
       "p.yaml:4:14: health_hook must be one command line"},
      {"health_log with a quote",
       "version: v9\nimage: {name: x}\nnodes: {hostlist: n1}\nhealth_log: \"/var/log/x'y\"\n",
       "p.yaml:4:13: health_log '/var/log/x'y' must be an absolute path"},
      {"unknown UEFI loader",
       "version: v9\nimage: {name: x}\nnodes: {hostlist: n1}\nuefi_loader: shim\n",
       "p.yaml:4:14: uefi_loader 'shim' must be grub (shim and grub, signed"},
      {"health check without command",
       "version: v9\nimage: {name: x}\nnodes: {hostlist: n1}\nhealth_checks:\n  - name: a\n",
       "missing required key 'command'"},
      {"kernel_args not a list",
       "version: v9\nimage: {name: x}\nnodes: {hostlist: n1}\nkernel_args: quiet\n",
       "p.yaml:4:14: 'kernel_args' must be a list of strings"},
      {"duplicate key", "version: v9\nversion: v9\nimage: {name: x}\nnodes: {hostlist: n1}\n",
       "p.yaml:2:1: duplicate key 'version'"},
      {"undeclared secret",
       "version: v9\nimage: {name: x}\nnodes: {hostlist: n1}\nplaybooks:\n"
       "  - playbook: a.yml\n    vars:\n      k: {secret: munge_key}\n",
       "p.yaml:7:10: var 'k' names secret 'munge_key', which the profile's 'secrets' does not "
       "declare"},
      {"public half of a random secret",
       "version: v9\nimage: {name: x}\nnodes: {hostlist: n1}\nsecrets:\n  - {name: s}\n"
       "playbooks:\n  - playbook: a.yml\n    vars: {k: {secret: s.pub}}\n",
       "names secret 's.pub', which the profile's 'secrets' does not declare as ssh-ed25519"},
      {"bad secret kind",
       "version: v9\nimage: {name: x}\nnodes: {hostlist: n1}\nsecrets:\n"
       "  - {name: s, generate: rot13}\n",
       "p.yaml:5:25: generate 'rot13' must be random, password, ssh-ed25519 or none"},
      {"bad secret name",
       "version: v9\nimage: {name: x}\nnodes: {hostlist: n1}\nsecrets:\n  - {name: ../x}\n",
       "secret name '../x' must be 1-64 of a-z"},
      {"secret twice",
       "version: v9\nimage: {name: x}\nnodes: {hostlist: n1}\nsecrets:\n  - {name: s}\n"
       "  - {name: s}\n",
       "secret 's' is declared twice"},
  };
  for (const auto& c : cases) {
    INFO(c.name);
    auto p = ParseProfile(c.text, "p.yaml", "v9", PlaybooksDir());
    REQUIRE_FALSE(p.ok());
    CHECK_MESSAGE(p.status().message().find(c.error) != std::string::npos, p.status().message());
  }
}

TEST_CASE("profile: secrets are declared by name and referred to from a playbook's vars") {
  auto p = ParseProfile(
      "version: v9\nimage: {name: x}\nnodes: {hostlist: n1}\nsecrets:\n"
      "  - {name: munge_key, generate: random, bytes: 1024}\n"
      "  - {name: cluster_key, generate: ssh-ed25519}\n"
      "playbooks:\n  - playbook: a.yml\n    vars:\n      munge_key_b64: {secret: munge_key}\n"
      "      pub: {secret: cluster_key.pub}\n",
      "p.yaml", "v9", PlaybooksDir());
  REQUIRE_MESSAGE(p.ok(), p.status().message());
  REQUIRE(p->secrets.size() == 2);
  CHECK(p->secrets[0].bytes == 1024);
  CHECK(p->secrets[1].generate == "ssh-ed25519");
  CHECK(FindSecret(*p, "cluster_key.pub") == &p->secrets[1]);
  CHECK(SecretRefOf(p->playbooks[0].vars["munge_key_b64"]) == "munge_key");
  // What the API shows of it: names and how they are made, no value.
  nlohmann::json j = ToJson(*p);
  CHECK(j["secrets"][0] ==
        nlohmann::json{{"name", "munge_key"}, {"generate", "random"}, {"bytes", 1024}});
}

TEST_CASE("profile: a playbook that does not load makes the profile fail, at the playbook's line") {
  // Forced onto the native runner, the native loader's refusal fails the parse.
  auto forced = ParseProfile(
      "version: v9\nimage: {name: x}\nnodes: {hostlist: n1}\nplaybooks:\n"
      "  - playbook: a.yml\n  - playbook: bad.yml\n    runner: native\n",
      "p.yaml", "v9", PlaybooksDir());
  REQUIRE_FALSE(forced.ok());
  const std::string& f = forced.status().message();
  CHECK_MESSAGE(f.find("p.yaml:6:15: playbook 'bad.yml' does not load") != std::string::npos, f);
  CHECK_MESSAGE(
      f.find(PlaybooksDir() + "/bad.yml:4:7: unknown module 'ansible.builtin.frobnicate'") !=
          std::string::npos,
      f);
  // Not forced, it goes to ansible-playbook: parsing runs no program, and
  // Ansible's verdict (with the native loader's refusal beside it) fails the
  // check, at the profile's line.
  auto p = ParseProfile(
      "version: v9\nimage: {name: x}\nnodes: {hostlist: n1}\nplaybooks:\n"
      "  - playbook: a.yml\n  - playbook: bad.yml\n",
      "p.yaml", "v9", PlaybooksDir());
  REQUIRE_MESSAGE(p.ok(), p.status().message());
  CHECK(p->playbooks.at(1).runs_on == PlaybookRunner::kAnsible);
  CHECK(p->playbooks.at(0).runs_on == PlaybookRunner::kNative);
  Status verdict = CheckProfileWithAnsible(*p, AnsibleTool{});
  REQUIRE_FALSE(verdict.ok());
  const std::string& m = verdict.message();
  CHECK_MESSAGE(m.find("p.yaml:6: playbook 'bad.yml' does not load") != std::string::npos, m);
  CHECK_MESSAGE(
      m.find(PlaybooksDir() + "/bad.yml:4:7: unknown module 'ansible.builtin.frobnicate'") !=
          std::string::npos,
      m);
  CHECK_MESSAGE(m.find("ansible-playbook --syntax-check refuses it") != std::string::npos, m);
}

TEST_CASE("profile: bake lists image-stage playbooks, each with the files it reaches") {
  REQUIRE(WriteFileAtomic(PlaybooksDir() + "/tpl.yml",
                          "- hosts: all\n  tasks:\n    - ansible.builtin.template:\n"
                          "        src: t.j2\n        dest: /etc/t\n")
              .ok());
  REQUIRE(WriteFileAtomic(PlaybooksDir() + "/t.j2", "hello\n").ok());
  auto p = ParseProfile(
      "version: v9\nimage: {name: lab}\nnodes: {hostlist: n1}\n"
      "bake:\n  - playbook: tpl.yml\n    vars: {pkg: slurmd}\n"
      "playbooks:\n  - playbook: a.yml\n",
      "p.yaml", "v9", PlaybooksDir());
  REQUIRE_MESSAGE(p.ok(), p.status().message());
  REQUIRE(p->bake.size() == 1);
  REQUIRE(p->playbooks.size() == 1);
  CHECK(p->bake[0].stage == PlaybookStage::kImage);
  CHECK(p->playbooks[0].stage == PlaybookStage::kNode);
  CHECK(p->bake[0].files == std::vector<std::string>{"playbooks/t.j2", "playbooks/tpl.yml"});
  CHECK(p->playbooks[0].files == std::vector<std::string>{"playbooks/a.yml"});
  CHECK(p->bake[0].vars["pkg"] == "slurmd");
  // The snapshot carries both stages' files.
  std::vector<std::string> paths;
  for (const auto& f : p->files) paths.push_back(f.path);
  CHECK(paths == std::vector<std::string>{"playbooks/a.yml", "playbooks/t.j2", "playbooks/tpl.yml",
                                          "profile.yaml"});
  CHECK(ToJson(*p)["bake"][0]["playbook"] == "tpl.yml");
}

TEST_CASE("profile: a secret given to a bake playbook is refused, naming both") {
  auto p = ParseProfile(
      "version: v9\nimage: {name: x}\nnodes: {hostlist: n1}\nsecrets:\n"
      "  - {name: munge_key, generate: random, bytes: 1024}\n"
      "bake:\n  - playbook: a.yml\n    vars:\n      slurm: {key: {secret: munge_key}}\n",
      "p.yaml", "v9", PlaybooksDir());
  REQUIRE_FALSE(p.ok());
  const std::string& m = p.status().message();
  CHECK_MESSAGE(m.find("p.yaml:9:7: bake playbook 'a.yml' gets secret 'munge_key' (var "
                       "'slurm.key'): an image is readable by every node") != std::string::npos,
                m);
  // The same var at node stage is fine.
  CHECK(ParseProfile("version: v9\nimage: {name: x}\nnodes: {hostlist: n1}\nsecrets:\n"
                     "  - {name: munge_key}\nplaybooks:\n  - playbook: a.yml\n"
                     "    vars: {key: {secret: munge_key}}\n",
                     "p.yaml", "v9", PlaybooksDir())
            .ok());
}

TEST_CASE("profile: a playbook forced onto ansible-playbook loads on a control node without it") {
  // The Debian package does not pull in Ansible: a shipped profile that
  // names it (lab-slurm) must not stop provisiond --check or the daemon.
  AnsibleTool missing;
  missing.program = PlaybooksDir() + "/no-ansible-playbook";
  auto forced = ParseProfile(
      "version: v9\nimage: {name: x}\nnodes: {hostlist: n1}\nbake:\n"
      "  - playbook: a.yml\n    runner: ansible\n",
      "p.yaml", "v9", PlaybooksDir());
  REQUIRE_MESSAGE(forced.ok(), forced.status().message());
  CHECK(forced->bake.at(0).runs_on == PlaybookRunner::kAnsible);
  CHECK(CheckProfileWithAnsible(*forced, missing).ok());
  // Left unchecked, and saying so where the runner is shown (profile show).
  CHECK_MESSAGE(forced->bake.at(0).runner_reason.find("(not checked: " + missing.program +
                                                      " is not installed") != std::string::npos,
                forced->bake.at(0).runner_reason);
  // Not forced, a playbook the native runner refuses still needs the tool
  // to be judged at all.
  auto unforced = ParseProfile(
      "version: v9\nimage: {name: x}\nnodes: {hostlist: n1}\nplaybooks:\n"
      "  - playbook: bad.yml\n",
      "p.yaml", "v9", PlaybooksDir());
  REQUIRE_MESSAGE(unforced.ok(), unforced.status().message());
  Status unchecked = CheckProfileWithAnsible(*unforced, missing);
  REQUIRE_FALSE(unchecked.ok());
  CHECK_MESSAGE(unchecked.message().find("is not installed") != std::string::npos,
                unchecked.message());
  std::vector<std::string> errors;
  auto shipped =
      LoadAllProfiles(PROVISION_SOURCE_DIR "/profiles", PROVISION_SOURCE_DIR "/playbooks", errors);
  for (const auto& e : errors) FAIL_CHECK(e);
  REQUIRE(shipped.count("lab-slurm"));
  CHECK(CheckProfileWithAnsible(shipped.at("lab-slurm"), missing).ok());
}

TEST_CASE("profile: every shipped profile loads") {
  std::vector<std::string> errors;
  auto all =
      LoadAllProfiles(PROVISION_SOURCE_DIR "/profiles", PROVISION_SOURCE_DIR "/playbooks", errors);
  for (const auto& e : errors) FAIL_CHECK(e);
  CHECK(all.count("v0.1"));
  CHECK(all.count("v0.2"));
  CHECK(all.count("lab"));
  CHECK(all.at("v0.1").nodes.hostnames == std::vector<std::string>{"node0", "node1"});
  CHECK(all.at("v0.2").nodes.hostnames.size() == 4);
  CHECK(all.at("v0.1").accelerators.at(0).model == "Arc A770");
  CHECK(all.at("lab-slurm").nodes.hostnames ==
        std::vector<std::string>{"slurm0", "slurm1", "slurm2"});
  CHECK(all.at("lab-slurm").health_hook == all.at("nvidia-slurm").health_hook);
  // The demo's profile runs both stages on the native runner (seconds per
  // boot under TCG, not ansible-playbook's start-up per playbook).
  REQUIRE(all.at("lab").bake.size() == 3);
  for (const auto* stage : {&all.at("lab").bake, &all.at("lab").playbooks})
    for (const auto& ref : *stage)
      CHECK_MESSAGE(ref.runs_on == PlaybookRunner::kNative, (ref.file + ": " + ref.runner_reason));
}

}  // namespace prov
