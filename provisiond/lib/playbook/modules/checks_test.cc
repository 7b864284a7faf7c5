// stat, assert, debug, set_fact, fail and ping, run on this machine
// (test_fixture.h).
#include <doctest/doctest.h>
#include <unistd.h>

#include "playbook/modules/modules.h"
#include "playbook/modules/test_fixture.h"

namespace prov {

TEST_CASE_FIXTURE(ModuleFixture, "stat reports type, mode, owner and checksum") {
  std::string f = dir / "f";
  PutFile(f, "abc");
  chmod(f.c_str(), 0640);
  auto o = Run("stat", {{"path", f}, {"checksum_algorithm", "sha256"}});
  REQUIRE_FALSE(o.failed);
  CHECK_FALSE(o.changed);
  const json& st = o.result["stat"];
  CHECK(st["exists"] == true);
  CHECK(st["isreg"] == true);
  CHECK(st["isdir"] == false);
  CHECK(st["mode"] == "0640");
  CHECK(st["size"] == 3);
  CHECK(st["uid"] == geteuid());
  CHECK(st["checksum"] == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(st["mtime"].get<double>() > 0);
  CHECK(!st["pw_name"].get<std::string>().empty());

  o = Run("stat", {{"path", f}});  // sha1 by default, as Ansible
  CHECK(o.result["stat"]["checksum"] == "a9993e364706816aba3e25717850c26c9cd0d89d");
  o = Run("stat", {{"path", f}, {"get_checksum", false}});
  CHECK_FALSE(o.result["stat"].contains("checksum"));

  fs::create_symlink(f, dir / "l");
  o = Run("stat", {{"path", dir / "l"}});
  CHECK(o.result["stat"]["islnk"] == true);
  CHECK(o.result["stat"]["lnk_source"] == f);
  o = Run("stat", {{"path", dir / "l"}, {"follow", true}});
  CHECK(o.result["stat"]["isreg"] == true);
  o = Run("stat", {{"path", dir.path}});
  CHECK(o.result["stat"]["isdir"] == true);
  o = Run("stat", {{"path", dir / "missing"}});
  CHECK_FALSE(o.failed);
  CHECK(o.result["stat"]["exists"] == false);
  o = Run("stat", {{"path", f}, {"checksum_algorithm", "crc"}});
  CHECK(o.failed);
}

TEST_CASE_FIXTURE(ModuleFixture, "assert, debug, set_fact, fail, ping") {
  vars = {{"x", 3}, {"name", "n1"}};
  auto o = Run("assert", {{"that", json::array({"x == 3", "name == 'n1'"})}});
  CHECK_FALSE(o.failed);
  CHECK(o.msg == "All assertions passed");
  o = Run("assert", {{"that", "x > 5"}, {"fail_msg", "x too small"}});
  CHECK(o.failed);
  CHECK(o.msg == "x too small");
  CHECK(o.result["assertion"] == "x > 5");
  CHECK(o.result["evaluated_to"] == false);
  o = Run("assert", {{"that", json::array({"x == 3", "x == 4"})}, {"msg", "second"}});
  CHECK(o.failed);
  CHECK(o.msg == "second");
  CHECK(o.result["assertion"] == "x == 4");
  o = Run("assert", {{"that", "x == 3"}, {"success_msg", "fine"}});
  CHECK(o.msg == "fine");
  o = Run("assert", {{"that", "x =="}});
  CHECK(o.failed);
  CHECK(o.msg.find("x ==") != std::string::npos);

  o = Run("debug", {{"msg", "hello"}});
  CHECK(o.result["msg"] == "hello");
  CHECK_FALSE(o.changed);
  o = Run("debug", {{"var", "x"}});
  CHECK(o.result["x"] == 3);
  o = Run("debug", {{"var", "undefined_thing"}});
  CHECK(o.result["undefined_thing"] == "VARIABLE IS NOT DEFINED!");
  o = Run("debug", json::object());
  CHECK(o.result["msg"] == "Hello world!");

  o = Run("set_fact", {{"a", 1}, {"b", json::array({"x"})}, {"cacheable", true}});
  CHECK_FALSE(o.failed);
  CHECK_FALSE(o.changed);
  CHECK(o.result["ansible_facts"] == json({{"a", 1}, {"b", json::array({"x"})}}));
  o = Run("set_fact", {{"bad-name", 1}});
  CHECK(o.failed);

  o = Run("fail", {{"msg", "stop here"}});
  CHECK(o.failed);
  CHECK(o.msg == "stop here");
  CHECK(o.result["msg"] == "stop here");
  o = Run("fail", json::object());
  CHECK(o.msg == "Failed as requested from task");

  o = Run("ping", json::object());
  CHECK_FALSE(o.failed);
  CHECK(o.result["ping"] == "pong");
  o = Run("ansible.builtin.ping", {{"data", "crash"}});
  CHECK(o.failed);
}

}  // namespace prov

namespace prov {

TEST_CASE_FIXTURE(ModuleFixture, "setup: the facts the node reported, filtered, nothing run") {
  vars["ansible_facts"] = {
      {"os_family", "Debian"}, {"distribution", "Debian"}, {"memtotal_mb", 4096}};
  auto o = Run("ansible.builtin.setup", json::object());
  CHECK_FALSE(o.failed);
  CHECK_FALSE(o.changed);
  CHECK(o.result["ansible_facts"]["ansible_os_family"] == "Debian");
  CHECK(o.result["ansible_facts"]["ansible_memtotal_mb"] == 4096);
  o = Run("setup", {{"filter", json::array({"ansible_dist*"})}, {"gather_subset", "!all"}});
  CHECK(o.result["ansible_facts"] == json{{"ansible_distribution", "Debian"}});
}

}  // namespace prov
