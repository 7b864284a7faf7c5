#include "configure/secrets.h"

#include <doctest/doctest.h>
#include <sys/stat.h>

#include <filesystem>
#include <set>
#include <thread>

#include "base/file_util.h"
#include "base/temp_dir.h"

namespace prov {
namespace {

int ModeOf(const std::string& path) {
  struct stat st {};
  REQUIRE(stat(path.c_str(), &st) == 0);
  return st.st_mode & 07777;
}

Profile SecretsProfile() {
  Profile p;
  p.version = "s1";
  p.secrets = {{"munge_key", "random", 1024, 1},
               {"cluster_key", "ssh-ed25519", 32, 2},
               {"db_password", "password", 32, 3},
               {"site_token", "none", 32, 4}};
  return p;
}

}  // namespace

TEST_CASE("secrets: made once on first use, 0600 in a 0700 directory") {
  TempDir d;
  auto store = SecretStore::Open(d.path() + "/secrets");
  REQUIRE(store.ok());
  CHECK(ModeOf(d.path() + "/secrets") == 0700);
  Profile p = SecretsProfile();
  auto munge = (*store)->Get(p.secrets[0], "munge_key");
  REQUIRE(munge.ok());
  CHECK(munge->size() == 1368);  // base64 of 1024 bytes
  CHECK(ModeOf(d.path() + "/secrets/munge_key") == 0600);
  CHECK(*(*store)->Get(p.secrets[0], "munge_key") == *munge);  // the same, not made again

  auto key = (*store)->Get(p.secrets[1], "cluster_key");
  REQUIRE(key.ok());
  CHECK(key->starts_with("-----BEGIN OPENSSH PRIVATE KEY-----"));
  auto pub = (*store)->Get(p.secrets[1], "cluster_key.pub");
  REQUIRE(pub.ok());
  CHECK(pub->starts_with("ssh-ed25519 AAAA"));
  CHECK(ModeOf(d.path() + "/secrets/cluster_key") == 0600);

  auto pw = (*store)->Get(p.secrets[2], "db_password");
  REQUIRE(pw.ok());
  CHECK(pw->size() == 24);
  CHECK(pw->find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789") ==
        std::string::npos);

  auto none = (*store)->Get(p.secrets[3], "site_token");
  CHECK(none.status().code() == Code::kNotFound);
  CHECK(none.status().message().find("provisionctl secret set site_token") != std::string::npos);
  REQUIRE((*store)->Set("site_token", "operator-value").ok());
  CHECK(*(*store)->Get(p.secrets[3], "site_token") == "operator-value");

  auto list = (*store)->List();
  REQUIRE(list.size() == 4);
  CHECK(list[0].name == "cluster_key");
  CHECK(list[0].has_public);
  CHECK(list[2].name == "munge_key");
  CHECK(list[2].bytes == 1369);
}

TEST_CASE("secrets: concurrent first uses make one value") {
  TempDir d;
  auto store = SecretStore::Open(d.path() + "/secrets");
  REQUIRE(store.ok());
  SecretDecl decl{"munge_key", "random", 64, 1};
  std::vector<std::string> seen(8);
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i)
    threads.emplace_back([&, i] { seen[i] = *(*store)->Get(decl, "munge_key"); });
  for (auto& t : threads) t.join();
  CHECK(std::set<std::string>(seen.begin(), seen.end()).size() == 1);
}

TEST_CASE("secrets: names are file names of the store, nothing else") {
  TempDir d;
  auto store = SecretStore::Open(d.path() + "/secrets");
  REQUIRE(store.ok());
  for (const char* bad : {"../tokens", "a/b", "", ".hidden", "Upper", "x\ny"}) {
    INFO(bad);
    CHECK((*store)->Set(bad, "v").code() == Code::kInvalid);
    CHECK_FALSE((*store)->Get({bad, "random", 32, 1}, bad).ok());
  }
  CHECK(!std::filesystem::exists(d.path() + "/tokens"));
}

TEST_CASE("secrets: vars that name one are filled; the names and values are what a run hides") {
  TempDir d;
  auto store = SecretStore::Open(d.path() + "/secrets");
  REQUIRE(store.ok());
  Profile p = SecretsProfile();
  nlohmann::json vars = {{"munge_key_b64", {{"secret", "munge_key"}}},
                         {"cluster_private_key", {{"secret", "cluster_key"}}},
                         {"cluster_public_key", {{"secret", "cluster_key.pub"}}},
                         {"plain", "x"},
                         {"not_a_ref", {{"secret", "munge_key"}, {"other", 1}}}};
  auto r = ResolveSecretVars(p, vars, store->get());
  REQUIRE(r.ok());
  CHECK(r->vars["munge_key_b64"] == *(*store)->Get(p.secrets[0], "munge_key"));
  CHECK(r->vars["cluster_public_key"].get<std::string>().starts_with("ssh-ed25519 "));
  CHECK(r->vars["plain"] == "x");
  CHECK(r->vars["not_a_ref"].is_object());
  CHECK(r->secret_vars.size() == 3);
  CHECK(r->secret_values.size() == 2);  // the public half is not a secret

  auto undeclared = ResolveSecretVars(p, {{"v", {{"secret", "nope"}}}}, store->get());
  CHECK(undeclared.status().message() ==
        "var 'v' names secret 'nope', which profile s1 does not declare");
  auto no_store = ResolveSecretVars(p, {{"v", {{"secret", "munge_key"}}}}, nullptr);
  CHECK_FALSE(no_store.ok());
}

TEST_CASE("secrets: redaction replaces values and the lines of multi-line ones") {
  std::string key = "-----BEGIN KEY-----\nAAAABBBBCCCCDDDD\nshort\n-----END KEY-----\n";
  std::string text = "got AAAABBBBCCCCDDDD and pw=hunter2hunter2 and short";
  CHECK(RedactSecrets(text, {key, "hunter2hunter2"}) == "got ******** and pw=******** and short");
  CHECK(RedactSecrets("aaaa", {""}) == "aaaa");
}

}  // namespace prov

#include "playbook/jinja/jinja.h"

namespace prov {

// Seed 003's profile reaches its Slurm and SSH plays without a key pasted:
// every secret its playbooks assert on is made by the store, and their
// asserts hold with what it made.
TEST_CASE("secrets: nvidia-slurm's munge key and cluster key pass its playbooks' asserts") {
  TempDir d;
  auto store = SecretStore::Open(d.path() + "/secrets");
  REQUIRE(store.ok());
  auto p = LoadProfile(PROVISION_SOURCE_DIR "/profiles", "nvidia-slurm",
                       PROVISION_SOURCE_DIR "/playbooks");
  REQUIRE_MESSAGE(p.ok(), p.status().message());
  int asserts = 0;
  for (const auto& ref : p->playbooks) {
    auto resolved = ResolveSecretVars(*p, ref.vars, store->get());
    REQUIRE_MESSAGE(resolved.ok(), resolved.status().message());
    for (const auto& play : ref.parsed->plays)
      for (const auto& task : play.tasks) {
        if (task.module != "assert" || (ref.file != "slurm.yml" && ref.file != "ssh-cluster.yml"))
          continue;
        for (const auto& cond : task.args["that"]) {
          INFO(ref.file << ": " << cond.get<std::string>());
          auto holds = EvalCondition(cond.get<std::string>(), resolved->vars);
          REQUIRE_MESSAGE(holds.ok(), holds.status().message());
          CHECK(*holds);
          ++asserts;
        }
      }
  }
  CHECK(asserts >= 3);  // the munge key's, the private key's and the public key's
  CHECK((*store)->List().size() == 2);
}

}  // namespace prov
