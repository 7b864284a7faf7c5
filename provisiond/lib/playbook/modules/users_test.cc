// user and group, run on this machine as root (test_fixture.h).
#include <doctest/doctest.h>
#include <unistd.h>

#include "playbook/modules/modules.h"
#include "playbook/modules/test_fixture.h"

namespace prov {

TEST_CASE_FIXTURE(ModuleFixture, "group and user: create, change, remove a system account") {
  if (geteuid() != 0) return;
  const std::string g = UniqueName("provtg"), g2 = UniqueName("provtx"), u = UniqueName("provtu");
  struct Cleanup {
    std::string u, g, g2;
    ~Cleanup() {
      std::string cmd = "userdel -r " + u + " >/dev/null 2>&1; groupdel " + g +
                        " >/dev/null 2>&1; groupdel " + g2 + " >/dev/null 2>&1";
      (void)std::system(cmd.c_str());
    }
  } cleanup{u, g, g2};

  Idempotent("group", {{"name", g}, {"system", true}});
  Idempotent("group", {{"name", g2}, {"gid", 45678}});
  auto o = Run("group", {{"name", g2}, {"gid", 45679}});
  CHECK(o.changed);
  CHECK(o.result["gid"] == 45679);

  std::string home = dir / "home";
  Idempotent("user", {{"name", u},
                      {"system", true},
                      {"group", g},
                      {"shell", "/bin/sh"},
                      {"home", home},
                      {"create_home", true},
                      {"comment", "test user"}});
  CHECK(fs::is_directory(home));
  o = Run("user", {{"name", u}, {"shell", "/bin/bash"}});
  CHECK(o.changed);
  CHECK(o.result["shell"] == "/bin/bash");
  Idempotent("user", {{"name", u}, {"groups", json::array({g2})}, {"append", true}});
  CHECK(Run("user", {{"name", u}, {"groups", g2}}).changed == false);
  // A new account has no password: locked already. With one, locking changes it once.
  Idempotent("user", {{"name", u}, {"password", "$6$provisiond$notarealhash"}});
  Idempotent("user", {{"name", u}, {"password_lock", true}});
  CHECK_FALSE(Run("user", {{"name", u}, {"password", "$6$provisiond$notarealhash"}}).changed);

  o = Run("user", {{"name", UniqueName("provtn")}, {"group", "no-such-group-provisiond"}});
  CHECK(o.failed);
  CHECK(o.msg.find("useradd") != std::string::npos);
  CHECK(o.msg.find("no-such-group-provisiond") != std::string::npos);
  o = Run("user", {{"name", "bad name!"}});
  CHECK(o.failed);
  CHECK(o.msg.find("not a valid user name") != std::string::npos);

  Idempotent("user", {{"name", u}, {"state", "absent"}, {"remove", true}});
  Idempotent("group", {{"name", g2}, {"state", "absent"}});
  Idempotent("group", {{"name", g}, {"state", "absent"}});
}

}  // namespace prov
