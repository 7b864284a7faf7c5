#include "bake/derived_image.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>

#include "base/file_util.h"

namespace prov {
namespace {

namespace fs = std::filesystem;

// A store with one imported base version of "lab", and a playbooks folder.
struct DerivedImageFixture {
  fs::path dir = fs::temp_directory_path() / ("provision-derived-" + std::to_string(getpid()));
  ImageCatalog catalog{(dir / "store").string()};

  DerivedImageFixture() {
    fs::remove_all(dir);
    fs::create_directories(dir / "src");
    fs::create_directories(dir / "playbooks");
    REQUIRE(WriteFileAtomic((dir / "src/k").string(), "kernel-1").ok());
    REQUIRE(WriteFileAtomic((dir / "src/i").string(), "initrd-1").ok());
    Playbook("packages.yml", "- hosts: all\n  tasks:\n    - ansible.builtin.apt: {name: munge}\n");
    Playbook("users.yml", "- hosts: all\n  tasks: []\n");
  }
  ~DerivedImageFixture() { fs::remove_all(dir); }

  void Playbook(const std::string& name, const std::string& text) {
    REQUIRE(WriteFileAtomic((dir / "playbooks" / name).string(), text).ok());
  }
  Profile Load(const std::string& version, const std::string& bake_vars = "{}") {
    auto p = ParseProfile("version: " + version +
                              "\nimage: {name: lab}\nnodes: {hostlist: n1}\n"
                              "bake:\n  - playbook: packages.yml\n    vars: " +
                              bake_vars + "\nplaybooks:\n  - playbook: users.yml\n",
                          "p.yaml", version, (dir / "playbooks").string());
    REQUIRE_MESSAGE(p.ok(), p.status().message());
    return *p;
  }
  std::string ImportBase(const std::string& initrd) {
    REQUIRE(WriteFileAtomic((dir / "src/i").string(), initrd).ok());
    return catalog.Import("lab", (dir / "src/k").string(), (dir / "src/i").string())->version;
  }
};

}  // namespace

TEST_CASE_FIXTURE(DerivedImageFixture,
                  "derived image: named by its base and bake playbooks, not the node stage") {
  CHECK(PlanDerivedImage(Load("a"), catalog).status().code() == Code::kNotFound);
  const std::string base1 = ImportBase("initrd-1");
  auto d = PlanDerivedImage(Load("a"), catalog);
  REQUIRE_MESSAGE(d.ok(), d.status().message());
  CHECK(d->name == "lab.baked");
  CHECK(d->version.size() == 16);
  CHECK(d->base == "lab@" + base1);
  CHECK_FALSE(d->built);
  CHECK(d->changes == std::vector<std::string>{"no derived image of lab yet"});

  // Another profile with the same base and bake list gets the same image.
  CHECK(PlanDerivedImage(Load("b"), catalog)->version == d->version);
  // A node-stage playbook's change is not the image's.
  Playbook("users.yml", "- hosts: all\n  tasks:\n    - ansible.builtin.debug: {msg: hi}\n");
  CHECK(PlanDerivedImage(Load("a"), catalog)->version == d->version);
  // A bake playbook's content, its vars and the base version are.
  Playbook("packages.yml", "- hosts: all\n  tasks:\n    - ansible.builtin.apt: {name: slurmd}\n");
  auto edited = PlanDerivedImage(Load("a"), catalog);
  CHECK(edited->version != d->version);
  CHECK(DiffDerivedInputs(d->inputs, edited->inputs) ==
        std::vector<std::string>{"playbooks/packages.yml changed"});
  auto vars = PlanDerivedImage(Load("a", "{x: 1}"), catalog);
  CHECK(vars->version != edited->version);
  CHECK(DiffDerivedInputs(edited->inputs, vars->inputs) ==
        std::vector<std::string>{"vars of bake playbook packages.yml changed"});
  const std::string base2 = ImportBase("initrd-2");
  auto rebased = PlanDerivedImage(Load("a"), catalog);
  CHECK(rebased->version != edited->version);
  CHECK(DiffDerivedInputs(edited->inputs, rebased->inputs) ==
        std::vector<std::string>{"base lab@" + base1 + " -> lab@" + base2});
}

TEST_CASE_FIXTURE(DerivedImageFixture,
                  "derived image: the plan compares with the same profile's last derived image") {
  ImportBase("initrd-1");
  // A derived image of profile b (another bake list) exists: a's plan says
  // it has none of its own yet, rather than listing b's differences.
  auto b = PlanDerivedImage(Load("b", "{other: 1}"), catalog);
  REQUIRE(b.ok());
  auto imported = catalog.Import(b->name, (dir / "src/k").string(), (dir / "src/i").string());
  REQUIRE(imported.ok());
  const std::string meta_path = imported->dir + "/image.json";
  auto meta = nlohmann::json::parse(*ReadFile(meta_path));
  meta["derived"] = {{"base", b->base}, {"profile", "b"}, {"inputs", b->inputs}};
  REQUIRE(WriteFileAtomic(meta_path, meta.dump()).ok());
  auto a = PlanDerivedImage(Load("a"), catalog);
  REQUIRE(a.ok());
  REQUIRE(a->changes.size() == 1);
  CHECK_MESSAGE(a->changes[0].rfind("no derived image of lab for profile a yet (the last one, " +
                                        imported->ref() + ", is profile b's: 1 difference(s))",
                                    0) == 0,
                a->changes[0]);
  // b's own plan compares with b's image: only its vars changed.
  auto b2 = PlanDerivedImage(Load("b", "{other: 2}"), catalog);
  CHECK(b2->changes == std::vector<std::string>{"vars of bake playbook packages.yml changed"});
}

TEST_CASE("derived image: differences in words") {
  using nlohmann::json;
  json a = {{"recipe", 1},
            {"base", "lab@1"},
            {"bake",
             {{{"playbook", "x.yml"},
               {"vars", json::object()},
               {"runner", "native"},
               {"files", {{"playbooks/x.yml", "1"}, {"playbooks/t.j2", "1"}}}}}}};
  json b = a;
  b["bake"][0]["files"].erase("playbooks/t.j2");
  b["bake"].push_back({{"playbook", "y.yml"},
                       {"vars", json::object()},
                       {"runner", "native"},
                       {"files", {{"playbooks/y.yml", "1"}}}});
  CHECK(DiffDerivedInputs(a, b) ==
        std::vector<std::string>{"bake playbook y.yml added", "playbooks/t.j2 removed"});
  json c = a;
  c["recipe"] = 2;
  CHECK(DiffDerivedInputs(a, c).at(0).find("recipe") != std::string::npos);
}

}  // namespace prov
