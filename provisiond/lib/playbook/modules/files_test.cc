// copy, template, file and lineinfile, run on this machine (test_fixture.h).
#include <doctest/doctest.h>
#include <sys/stat.h>

#include "playbook/modules/modules.h"
#include "playbook/modules/test_fixture.h"

namespace prov {

TEST_CASE_FIXTURE(ModuleFixture,
                  "copy content and src: checksum, temp + rename, mode only when it differs") {
  std::string dest = dir / "motd";
  Idempotent("copy", {{"dest", dest}, {"content", "hello\n"}, {"mode", "0600"}});
  CHECK(FileText(dest) == "hello\n");
  CHECK(Mode(dest) == 0600);

  // Only the mode differs: changed, content untouched.
  auto o = Run("copy", {{"dest", dest}, {"content", "hello\n"}, {"mode", "0640"}});
  CHECK(o.changed);
  CHECK(o.result["mode"] == "0640");
  CHECK(Mode(dest) == 0640);
  // YAML's unquoted 0644 arrives as the integer 420.
  o = Run("copy", {{"dest", dest}, {"content", "hello\n"}, {"mode", 420}});
  CHECK(o.changed);
  CHECK(Mode(dest) == 0644);
  o = Run("copy", {{"dest", dest}, {"content", "hello\n"}, {"mode", "u=rw,g=r,o=r"}});
  CHECK_FALSE(o.changed);

  // New content keeps the file's mode; owner given as it is: no change.
  o = Run("copy", {{"dest", dest}, {"content", "bye\n"}, {"owner", "root"}, {"backup", true}});
  CHECK(o.changed);
  CHECK(FileText(dest) == "bye\n");
  CHECK(Mode(dest) == 0644);
  REQUIRE(o.result.contains("backup_file"));
  CHECK(FileText(o.result["backup_file"].get<std::string>()) == "hello\n");
  // No temporary file left behind.
  for (const auto& e : fs::directory_iterator(dir.path))
    CHECK(e.path().filename().string().rfind(".provisiond.", 0) != 0);

  // A new file without a mode gets what the umask leaves of 0666, as with
  // Ansible; through a path with doubled and trailing slashes in its folder.
  const mode_t old_umask = umask(027);
  o = Run("copy", {{"dest", dir.path + "//out-new//fresh"}, {"content", "new\n"}});
  umask(old_umask);
  CHECK(o.failed);  // the folder does not exist yet
  fs::create_directories(dir / "out-new");
  umask(027);
  o = Run("copy", {{"dest", dir.path + "//out-new//fresh"}, {"content", "new\n"}});
  umask(old_umask);
  CHECK(o.changed);
  CHECK(FileText(dir / "out-new/fresh") == "new\n");
  CHECK(Mode(dir / "out-new/fresh") == 0640);

  // force: no keeps an existing file.
  o = Run("copy", {{"dest", dest}, {"content", "other\n"}, {"force", "no"}});
  CHECK_FALSE(o.changed);
  CHECK(FileText(dest) == "bye\n");

  // src under playbook_dir/files/, and into a directory under the source's name.
  fs::create_directories(dir / "files");
  fs::create_directories(dir / "out");
  PutFile(dir / "files/app.conf", "x=1\n");
  Idempotent("copy", {{"src", "app.conf"}, {"dest", dir / "out/"}});
  CHECK(FileText(dir / "out/app.conf") == "x=1\n");

  // Large content: checked first, sent only when it differs.
  std::string big(300 * 1024, 'z');
  Idempotent("copy", {{"dest", dir / "big"}, {"content", big}});
  CHECK(FileText(dir / "big") == big);
}

TEST_CASE_FIXTURE(ModuleFixture, "copy errors name the problem") {
  auto o = Run("copy", {{"dest", dir / "nodir/file"}, {"content", "x"}});
  CHECK(o.failed);
  CHECK(o.msg.find("Destination directory") != std::string::npos);
  CHECK(o.msg.find("does not exist") != std::string::npos);

  o = Run("copy", {{"dest", dir / "f"}, {"src", "no-such-file"}});
  CHECK(o.failed);
  CHECK(o.msg.find("'no-such-file' not found") != std::string::npos);

  o = Run("copy", {{"dest", dir / "f"}, {"content", "x"}, {"mode", "0999"}});
  CHECK(o.failed);
  CHECK(o.msg.find("is not a mode") != std::string::npos);
  CHECK_FALSE(fs::exists(dir / "f"));

  o = Run("copy", {{"dest", dir / "f"}, {"content", "x"}, {"owner", "no-such-user-provisiond"}});
  CHECK(o.failed);
  CHECK(o.msg.find("chown no-such-user-provisiond") != std::string::npos);

  o = Run("copy", {{"dest", dir.path}, {"content", "x"}});
  CHECK(o.failed);
  CHECK(o.msg.find("is a directory") != std::string::npos);

  o = Run("copy", {{"dest", dir / "f"}, {"content", "x"}, {"state", "present"}});
  CHECK(o.failed);
  CHECK(o.msg.find("unknown argument 'state'") != std::string::npos);
}

TEST_CASE_FIXTURE(ModuleFixture, "template renders its src with the task's variables") {
  fs::create_directories(dir / "templates");
  PutFile(dir / "templates/greeting.j2", "Hello {{ who }}!\n");
  vars = {{"who", "world"}};
  std::string dest = dir / "greeting";
  Idempotent("template", {{"src", "greeting.j2"}, {"dest", dest}, {"mode", "0644"}});
  CHECK(FileText(dest) == "Hello world!\n");
  vars = {{"who", "nodes"}};
  auto o = Run("template", {{"src", "greeting.j2"}, {"dest", dest}});
  CHECK(o.changed);
  CHECK(FileText(dest) == "Hello nodes!\n");

  o = Run("template", {{"src", "missing.j2"}, {"dest", dest}});
  CHECK(o.failed);
  CHECK(o.msg.find("missing.j2") != std::string::npos);

  PutFile(dir / "templates/broken.j2", "{% if %}\n");
  o = Run("template", {{"src", "broken.j2"}, {"dest", dest}});
  CHECK(o.failed);
  CHECK(o.msg.find("broken.j2") != std::string::npos);
}

TEST_CASE_FIXTURE(ModuleFixture, "file: directory, touch, link, absent, attributes") {
  std::string d = dir / "a/b";
  Idempotent("file", {{"path", d}, {"state", "directory"}, {"mode", "0750"}});
  CHECK(fs::is_directory(d));
  CHECK(Mode(d) == 0750);
  auto o = Run("file", {{"path", d}, {"state", "directory"}, {"mode", "0755"}});
  CHECK(o.changed);
  CHECK(o.result["mode"] == "0755");

  // recurse: the mode reaches what is inside.
  PutFile(d + "/inner", "x");
  chmod((d + "/inner").c_str(), 0600);
  Idempotent(
      "file",
      {{"path", dir / "a"}, {"state", "directory"}, {"recurse", true}, {"mode", "u+rwX,g+rX"}});
  CHECK((Mode(d + "/inner") & 0040) != 0);

  // touch changes every time (as in Ansible), unless the times are preserved.
  std::string t = dir / "touched";
  o = Run("file", {{"path", t}, {"state", "touch"}});
  CHECK(o.changed);
  CHECK(fs::exists(t));
  o = Run("file", {{"path", t}, {"state", "touch"}});
  CHECK(o.changed);
  Idempotent("file", {{"path", dir / "t2"},
                      {"state", "touch"},
                      {"modification_time", "preserve"},
                      {"access_time", "preserve"}});

  // state: file only fixes attributes of what exists.
  Idempotent("file", {{"path", t}, {"mode", "0604"}});
  CHECK(Mode(t) == 0604);

  std::string l = dir / "link";
  Idempotent("file", {{"path", l}, {"state", "link"}, {"src", t}});
  CHECK(fs::read_symlink(l) == t);
  o = Run("file", {{"path", l}, {"state", "link"}, {"src", "touched"}});
  CHECK(o.changed);
  CHECK(fs::read_symlink(l) == "touched");
  CHECK(o.result["state"] == "link");

  Idempotent("file", {{"path", l}, {"state", "absent"}});
  CHECK_FALSE(fs::exists(fs::symlink_status(l)));
  Idempotent("file", {{"path", dir / "a"}, {"state", "absent"}});
  CHECK_FALSE(fs::exists(dir / "a"));
}

TEST_CASE_FIXTURE(ModuleFixture, "file errors name the problem") {
  auto o = Run("file", {{"path", dir / "missing"}, {"state", "file"}});
  CHECK(o.failed);
  CHECK(o.msg.find("is absent, cannot continue") != std::string::npos);

  PutFile(dir / "plain", "x");
  o = Run("file", {{"path", dir / "plain"}, {"state", "directory"}});
  CHECK(o.failed);
  CHECK(o.msg.find("not a directory") != std::string::npos);

  o = Run("file", {{"path", dir / "plain"}, {"state", "link"}, {"src", "/etc/hostname"}});
  CHECK(o.failed);
  CHECK(o.msg.find("refusing to convert") != std::string::npos);
  // force converts.
  o = Run("file",
          {{"path", dir / "plain"}, {"state", "link"}, {"src", "/etc/hostname"}, {"force", true}});
  CHECK_FALSE(o.failed);
  CHECK(fs::is_symlink(dir / "plain"));

  o = Run("file", {{"path", dir / "l2"}, {"state", "link"}, {"src", dir / "nothing"}});
  CHECK(o.failed);
  CHECK(o.msg.find("does not exist") != std::string::npos);

  o = Run("file", {{"path", dir / "l3"}, {"state", "link"}});
  CHECK(o.failed);
  CHECK(o.msg.find("src is required") != std::string::npos);

  o = Run("file", {{"path", dir / "x"}, {"state", "directory"}, {"mode", "rwxr-xr-x"}});
  CHECK(o.failed);
  CHECK(o.msg.find("is not a mode") != std::string::npos);

  o = Run("file", {{"path", dir / "y"}, {"state", "folder"}});
  CHECK(o.failed);
  CHECK(o.msg.find("expected one of") != std::string::npos);

  o = Run("file", {{"path", dir / "nodir/sub/t"}, {"state", "touch"}});
  CHECK(o.failed);
  CHECK(o.msg.find("could not touch") != std::string::npos);
}

TEST_CASE_FIXTURE(ModuleFixture, "lineinfile adds, replaces, inserts and removes lines") {
  std::string f = dir / "conf";
  Idempotent("lineinfile", {{"path", f}, {"line", "a=1"}, {"create", true}, {"mode", "0640"}});
  CHECK(FileText(f) == "a=1\n");
  CHECK(Mode(f) == 0640);

  PutFile(f, "# header\nport=80\nname=x");  // no final newline
  Idempotent("lineinfile", {{"path", f}, {"regexp", "^port="}, {"line", "port=8080"}});
  CHECK(FileText(f) == "# header\nport=8080\nname=x");

  Idempotent("lineinfile", {{"path", f}, {"line", "last=1"}});
  CHECK(FileText(f) == "# header\nport=8080\nname=x\nlast=1\n");

  Idempotent("lineinfile", {{"path", f}, {"line", "after=1"}, {"insertafter", "^port="}});
  CHECK(FileText(f) == "# header\nport=8080\nafter=1\nname=x\nlast=1\n");

  Idempotent("lineinfile", {{"path", f}, {"line", "first=1"}, {"insertbefore", "BOF"}});
  CHECK(FileText(f).rfind("first=1\n# header\n", 0) == 0);

  Idempotent("lineinfile", {{"path", f}, {"line", "before=1"}, {"insertbefore", "^name="}});
  CHECK(FileText(f).find("before=1\nname=x\n") != std::string::npos);

  // The line exists though the regexp matches nothing: no duplicate.
  auto o = Run("lineinfile", {{"path", f}, {"regexp", "^nomatch"}, {"line", "last=1"}});
  CHECK_FALSE(o.changed);

  o = Run("lineinfile", {{"path", f}, {"regexp", "=1$"}, {"state", "absent"}});
  CHECK(o.changed);
  CHECK(o.msg == "4 line(s) removed");
  CHECK(FileText(f) == "# header\nport=8080\nname=x\n");
  o = Run("lineinfile", {{"path", f}, {"regexp", "=1$"}, {"state", "absent"}});
  CHECK_FALSE(o.changed);

  o = Run("lineinfile", {{"path", dir / "missing"}, {"line", "x"}});
  CHECK(o.failed);
  CHECK(o.msg.find("does not exist") != std::string::npos);
  o = Run("lineinfile", {{"path", dir / "missing"}, {"line", "x"}, {"state", "absent"}});
  CHECK_FALSE(o.failed);
  CHECK_FALSE(o.changed);

  o = Run("lineinfile", {{"path", f}, {"regexp", "([a-z"}, {"line", "x"}});
  CHECK(o.failed);
  CHECK(o.msg.find("invalid regular expression") != std::string::npos);

  // The pattern is Python's (named groups) and runs on a bounded engine: a
  // line from the node that sends it into exponential backtracking fails the
  // task instead of hanging the worker.
  Idempotent("lineinfile",
             {{"path", f}, {"regexp", "^(?P<key>port)=\\d+$"}, {"line", "port=8081"}});
  CHECK(FileText(f).find("port=8081\n") != std::string::npos);
  PutFile(f, std::string(40, 'a') + "-b\n");
  o = Run("lineinfile", {{"path", f}, {"regexp", "(a*)*b"}, {"line", "x"}});
  CHECK(o.failed);
  CHECK(o.msg.find("hit its match limit") != std::string::npos);

  o = Run("lineinfile", {{"path", f}, {"regexp", "^x"}});
  CHECK(o.failed);
  CHECK(o.msg.find("line is required") != std::string::npos);

  o = Run("lineinfile", {{"path", dir.path}, {"line", "x"}});
  CHECK(o.failed);
  CHECK(o.msg.find("not a regular file") != std::string::npos);
}

}  // namespace prov
