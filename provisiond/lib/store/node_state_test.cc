#include "store/node_state.h"

#include <doctest/doctest.h>

namespace prov {

TEST_CASE("node life cycle: the allowed and refused transitions") {
  using S = NodeState;
  struct Case {
    S from, to;
    bool allowed;
  };
  const Case cases[] = {
      {S::kDiscovered, S::kEnrolled, true},  {S::kDiscovered, S::kReady, false},
      {S::kDiscovered, S::kBooting, false},  {S::kEnrolled, S::kBooting, true},
      {S::kEnrolled, S::kReady, false},      {S::kBooting, S::kBooted, true},
      {S::kBooting, S::kReady, false},       {S::kBooted, S::kConfiguring, true},
      {S::kConfiguring, S::kReady, true},    {S::kConfiguring, S::kFailed, true},
      {S::kReady, S::kConfiguring, true},    {S::kReady, S::kBooting, true},
      {S::kFailed, S::kEnrolled, true},      {S::kFailed, S::kReady, false},
      {S::kMaintenance, S::kEnrolled, true}, {S::kMaintenance, S::kReady, false},
      {S::kRetired, S::kEnrolled, true},     {S::kRetired, S::kBooting, false},
      {S::kReady, S::kReady, false},         {S::kReady, S::kDiscovered, false},
  };
  for (const auto& c : cases) {
    CAPTURE(ToString(c.from));
    CAPTURE(ToString(c.to));
    CHECK(CanTransition(c.from, c.to) == c.allowed);
    CHECK(CheckTransition(c.from, c.to).ok() == c.allowed);
  }
  // Every state except discovered can be retired, and nothing returns to
  // discovered: that state only comes from an unknown MAC.
  for (S s : AllNodeStates()) {
    if (s != S::kRetired) CHECK(CanTransition(s, S::kRetired));
    CHECK_FALSE(CanTransition(s, S::kDiscovered));
  }
}

TEST_CASE("a refused transition says where the node can go") {
  Status s = CheckTransition(NodeState::kDiscovered, NodeState::kReady);
  CHECK(s.code() == Code::kConflict);
  CHECK(s.message() ==
        "a node cannot go from 'discovered' to 'ready' (from 'discovered' it can go to: "
        "enrolled, retired)");
}

TEST_CASE("state names round-trip") {
  for (NodeState s : AllNodeStates()) CHECK(ParseNodeState(ToString(s)) == s);
  CHECK_FALSE(ParseNodeState("up").has_value());
}

TEST_CASE("MAC addresses are normalized or refused") {
  CHECK(*NormalizeMac("52:54:00:AB:cd:01") == "52:54:00:ab:cd:01");
  CHECK(*NormalizeMac("52-54-00-ab-cd-01") == "52:54:00:ab:cd:01");
  CHECK(*NormalizeMac("5254.00ab.cd01") == "52:54:00:ab:cd:01");
  CHECK(NormalizeMac("52:54:00:ab:cd").status().message().find("12 hex digits") !=
        std::string::npos);
  CHECK(NormalizeMac("52:54:00:ab:cd:zz").status().message().find("'z'") != std::string::npos);
  CHECK_FALSE(NormalizeMac("").ok());
}

TEST_CASE("hostnames") {
  CHECK(ValidateHostname("node0").ok());
  CHECK(ValidateHostname("control_0_1").ok());
  CHECK_FALSE(ValidateHostname("").ok());
  CHECK_FALSE(ValidateHostname("-a").ok());
  CHECK_FALSE(ValidateHostname("a.b").ok());
  CHECK_FALSE(ValidateHostname(std::string(64, 'a')).ok());
}

}  // namespace prov

namespace prov {

TEST_CASE("node data: an IP is one dotted quad, a host key one key line") {
  CHECK(ValidateNodeIp("10.99.0.5").ok());
  CHECK(ValidateNodeIp("255.255.255.0").ok());
  for (const char* bad : {"10.0.0.5\ndhcp-host=evil", "10.0.0", "10.0.0.256", "10.0.0.05", "",
                          "::1", "10.0.0.5 ", "a.b.c.d", "1.2.3.4.5"}) {
    INFO(bad);
    Status s = ValidateNodeIp(bad);
    CHECK_FALSE(s.ok());
    CHECK(s.message().find("is not an IPv4 address") != std::string::npos);
  }
  CHECK(ValidateHostKey("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHq root@node0").ok());
  CHECK(ValidateHostKey("ecdsa-sha2-nistp256 AAAAE2VjZHNh").ok());
  CHECK_FALSE(ValidateHostKey("ssh-ed25519 AAAA x\n@cert-authority * ssh-ed25519 AAAA").ok());
  CHECK_FALSE(ValidateHostKey("ssh-ed25519").ok());
  CHECK_FALSE(ValidateHostKey("made-up AAAA").ok());
  CHECK_FALSE(ValidateHostKey("ssh-ed25519 AA<script>").ok());
}

}  // namespace prov

namespace prov {

TEST_CASE("host key fingerprints are ssh-keygen -lf's") {
  // ssh-keygen -lf on this key printed SHA256:5/hde79JmfFgNB9dn6+KOnqtwO3PdmEwoZF6w7xKJOM.
  CHECK(HostKeyFingerprint(
            "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFj8k4y8j17Lkg0zq8PvoC/bNhAc7KSyQ6SLkXEi5XQn t") ==
        "SHA256:5/hde79JmfFgNB9dn6+KOnqtwO3PdmEwoZF6w7xKJOM");
  CHECK(HostKeyFingerprint("ssh-ed25519") == "");
  CHECK(HostKeyFingerprint("") == "");
}

}  // namespace prov
