#include "config.h"

#include <doctest/doctest.h>

namespace prov {

TEST_CASE("config: listen and data_dir alone are a complete config") {
  auto c = ParseConfig("listen: 127.0.0.1:9000\ndata_dir: /tmp/p\n", "/etc/p/provisiond.yaml");
  REQUIRE(c.ok());
  CHECK(c->listen_host == "127.0.0.1");
  CHECK(c->listen_port == 9000);
  CHECK(c->data_dir == "/tmp/p");
  CHECK(c->effective_tokens_file() == "/tmp/p/tokens");
  CHECK(c->log_level == "info");
  CHECK(c->max_body_bytes == 1048576);
}

TEST_CASE("config: every default in the table is valid") {
  auto c = ParseConfig("", "x.yaml");
  REQUIRE(c.ok());
  CHECK(c->listen_port == 8080);
  CHECK(c->data_dir == "/var/lib/provisiond");
  for (const auto& s : ConfigSettings()) {
    CAPTURE(s.name);
    CHECK(std::string(s.help).size() > 10);
  }
}

TEST_CASE(
    "config: the inventory is SQLite or a PostgreSQL URI; the lease's timings keep their "
    "relations") {
  auto lite = ParseConfig("data_dir: /tmp/p\n", "x.yaml");
  REQUIRE(lite.ok());
  CHECK(lite->database_path() == "/tmp/p/provisiond.db");
  auto pg = ParseConfig("database: postgresql://provisiond@db1,db2/provisiond\n", "x.yaml");
  REQUIRE(pg.ok());
  CHECK(pg->database_path() == "postgresql://provisiond@db1,db2/provisiond");
  auto file = ParseConfig("database: /var/lib/other.db\n", "x.yaml");
  REQUIRE_FALSE(file.ok());
  CHECK(file.status().message().find("expected empty (SQLite) or a postgresql:// URI") !=
        std::string::npos);
  // Two renewals and the stop margin must fit in the lease: refused at
  // load, naming the settings.
  auto tight = ParseConfig("control.lease_ms: 5000\ncontrol.renew_ms: 2000\n", "/etc/p.yaml");
  REQUIRE_FALSE(tight.ok());
  CHECK(tight.status().message() ==
        "/etc/p.yaml: control.lease_ms (5000) must be at least 2 x control.renew_ms + "
        "control.stop_margin_ms (7000): two renewals must fit before the active gives up");
  CHECK(ParseConfig("control.lease_ms: 7000\ncontrol.renew_ms: 2000\n", "x.yaml").ok());
}

TEST_CASE("config: listen_connections bounds the listener's connections") {
  auto c = ParseConfig("", "x.yaml");
  REQUIRE(c.ok());
  CHECK(c->listen_connections == 4096);
  c = ParseConfig("listen_connections: 11024\n", "x.yaml");
  REQUIRE(c.ok());
  CHECK(c->listen_connections == 11024);
  for (const char* bad : {"8", "-1", "many"}) {
    CAPTURE(bad);
    CHECK(!ParseConfig(std::string("listen_connections: ") + bad + "\n", "x.yaml").ok());
  }
}

TEST_CASE("config: listen_api_requests bounds the API requests answered at once") {
  auto c = ParseConfig("", "x.yaml");
  REQUIRE(c.ok());
  CHECK(c->listen_api_requests == 1024);
  c = ParseConfig("listen_api_requests: 8\n", "x.yaml");
  REQUIRE(c.ok());
  CHECK(c->listen_api_requests == 8);
  for (const char* bad : {"0", "-1", "100000", "some"}) {
    CAPTURE(bad);
    CHECK(!ParseConfig(std::string("listen_api_requests: ") + bad + "\n", "x.yaml").ok());
  }
}

TEST_CASE("config: listen_idle_timeout_s closes stalled connections") {
  auto c = ParseConfig("", "x.yaml");
  REQUIRE(c.ok());
  CHECK(c->listen_idle_timeout_s == 30);
  c = ParseConfig("listen_idle_timeout_s: 2\n", "x.yaml");
  REQUIRE(c.ok());
  CHECK(c->listen_idle_timeout_s == 2);
  for (const char* bad : {"0", "3601", "soon"}) {
    CAPTURE(bad);
    CHECK(!ParseConfig(std::string("listen_idle_timeout_s: ") + bad + "\n", "x.yaml").ok());
  }
}

TEST_CASE("config: listen_backlog sizes the accept queue") {
  auto c = ParseConfig("", "x.yaml");
  REQUIRE(c.ok());
  CHECK(c->listen_backlog == 4096);
  c = ParseConfig("listen_backlog: 16384\n", "x.yaml");
  REQUIRE(c.ok());
  CHECK(c->listen_backlog == 16384);
  for (const char* bad : {"0", "15", "1000001", "many"}) {
    CAPTURE(bad);
    CHECK(!ParseConfig(std::string("listen_backlog: ") + bad + "\n", "x.yaml").ok());
  }
}

TEST_CASE("config: the installed nodes' heartbeat, every 30 s unless set; 0 turns it off") {
  CHECK(ParseConfig("", "p.yaml")->heartbeat_s == 30);
  CHECK(ParseConfig("configure:\n  heartbeat: 0\n", "p.yaml")->heartbeat_s == 0);
  CHECK_FALSE(ParseConfig("configure:\n  heartbeat: -1\n", "p.yaml").ok());
}

TEST_CASE("config: booleans take YAML's spellings") {
  auto c = ParseConfig("", "p.yaml");
  REQUIRE(c.ok());
  CHECK(c->resume_on_start);
  for (const char* no : {"false", "no", "off"}) {
    auto off = ParseConfig(std::string("configure:\n  resume_on_start: ") + no + "\n", "p.yaml");
    REQUIRE(off.ok());
    CHECK_FALSE(off->resume_on_start);
  }
}

TEST_CASE("config: relative paths are relative to the config file") {
  auto c = ParseConfig("data_dir: state\nprofiles_dir: ../profiles\n", "/srv/lab/conf/p.yaml");
  REQUIRE(c.ok());
  CHECK(c->data_dir == "/srv/lab/conf/state");
  CHECK(c->profiles_dir == "/srv/lab/profiles");
}

TEST_CASE("config: errors name file:line:col, all of them at once") {
  struct Case {
    const char* text;
    const char* error;
  };
  const Case cases[] = {
      {"listen: 127.0.0.1\n", "p.yaml:1:9: 'listen': expected address:port, found '127.0.0.1'"},
      {"listen: a:99999\n",
       "p.yaml:1:9: 'listen': port of 'a:99999': expected a number between 0 and 65535"},
      {"data_dir: /x\nlisten_port: 5\n", "p.yaml:2:1: unknown key 'listen_port'"},
      {"log_level: loud\n", "p.yaml:1:12: 'log_level': expected one of trace"},
      {"max_body_bytes: lots\n", "p.yaml:1:17: 'max_body_bytes': expected a whole number"},
      {"data_dir: [a, b]\n", "p.yaml:1:11: 'data_dir' must be path, found a list"},
      {"data_dir: /a\ndata_dir: /b\n", "p.yaml:2:1: duplicate key 'data_dir'"},
      {"listen: [\n", "p.yaml:2:1: YAML syntax"},
      {"- a\n- b\n", "p.yaml:1:1: the config must be a mapping"},
      {"data_dir: \"\"\n", "p.yaml:1:11: 'data_dir': expected a path"},
      {"configure:\n  resume_on_start: maybe\n",
       "p.yaml:2:20: 'configure.resume_on_start': expected true or false, found 'maybe'"},
  };
  for (const auto& c : cases) {
    INFO(c.text);
    auto r = ParseConfig(c.text, "p.yaml");
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().message().find(c.error) != std::string::npos);
  }
  auto two = ParseConfig("listen: x\nbogus: 1\n", "p.yaml");
  REQUIRE_FALSE(two.ok());
  CHECK(two.status().message().find("p.yaml:1:9") != std::string::npos);
  CHECK(two.status().message().find("p.yaml:2:1") != std::string::npos);
}

TEST_CASE("config: the description lists every key") {
  std::string d = DescribeConfig();
  for (const auto& s : ConfigSettings()) CHECK(d.find(s.name) != std::string::npos);
}

}  // namespace prov
