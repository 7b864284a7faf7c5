// The NFS clients' connections as /proc/net/tcp shows them, and the tickle's
// bytes. Sending one is lab.ha's (a raw socket, a node's TCP).
#include "ha/nfs_clients.h"

#include <doctest/doctest.h>

#include <fstream>

#include "base/temp_dir.h"

namespace prov {
namespace {

std::string WriteFile(const TempDir& dir, const std::string& name, const std::string& text) {
  const std::string path = dir.path() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

// The Internet checksum over the pseudo-header and `tcp` (whose own checksum
// is included): 0 when the segment's checksum is right.
uint16_t Verify(uint32_t src, uint32_t dst, const std::string& tcp) {
  uint32_t sum = (src >> 16) + (src & 0xffff) + (dst >> 16) + (dst & 0xffff) + 6 + tcp.size();
  for (size_t i = 0; i + 1 < tcp.size(); i += 2)
    sum += (static_cast<uint8_t>(tcp[i]) << 8) | static_cast<uint8_t>(tcp[i + 1]);
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<uint16_t>(~sum & 0xffff);
}

}  // namespace

TEST_CASE("nfs clients: a connection as text and back; anything else is refused") {
  TcpConnection c{
      .local = "10.99.0.1", .local_port = 2049, .remote = "10.99.0.101", .remote_port = 872};
  CHECK(c.ToString() == "10.99.0.1:2049>10.99.0.101:872");
  auto back = TcpConnection::Parse(c.ToString());
  REQUIRE(back.ok());
  CHECK(*back == c);
  for (const std::string bad :
       {"", "10.99.0.1:2049", "10.99.0.1:2049>", "10.99.0.1:0>10.99.0.101:872",
        "10.99.0.1:2049>10.99.0.101:65536", "10.99.0.1:2049>node1:872",
        "10.99.0.1:2049>10.99.0.101:8x", "10.99.0.1:2049>10.99.0.101:872;rm -rf /",
        "fd00::1:2049>10.99.0.101:872"}) {
    auto r = TcpConnection::Parse(bad);
    CHECK_MESSAGE(!r.ok(), bad);
    if (!r.ok()) CHECK(r.status().message().find("is not a TCP connection") != std::string::npos);
  }
}

TEST_CASE("nfs clients: the established connections to a port, from /proc/net/tcp") {
  TempDir dir;
  // 10.99.0.1:2049 (0x0801) is 0100630A as the kernel prints it on x86;
  // states: 0A listening, 01 established, 06 TIME_WAIT.
  const std::string tcp = WriteFile(
      dir, "tcp",
      "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout "
      "inode\n"
      "   0: 00000000:0801 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 "
      "1\n"
      "   1: 0100630A:0801 6500630A:0368 01 00000000:00000000 00:00000000 00000000     0        0 "
      "2\n"
      "   2: 0B00630A:0801 6600630A:036A 01 00000000:00000000 00:00000000 00000000     0        0 "
      "3\n"
      "   3: 0100630A:0801 6700630A:0369 06 00000000:00000000 00:00000000 00000000     0        0 "
      "4\n"
      "   4: 0100630A:1F90 6500630A:C000 01 00000000:00000000 00:00000000 00000000     0        0 "
      "5\n"
      "   5: garbage\n");
  const std::string none6 = WriteFile(dir, "tcp6", "  sl  local_address ...\n");
  auto got = EstablishedTo(2049, tcp, none6);
  REQUIRE(got.size() == 2);
  CHECK(got[0].ToString() == "10.99.0.1:2049>10.99.0.101:872");
  CHECK(got[1].ToString() == "10.99.0.11:2049>10.99.0.102:874");
  CHECK(EstablishedTo(2049, dir.path() + "/none", dir.path() + "/none6").empty());
  // A server listening on :: (nfs-ganesha) holds IPv4 clients as
  // ::ffff:10.99.0.1; IPv6 clients are not listed.
  const std::string mapped = WriteFile(
      dir, "mapped",
      "  sl  local_address                         remote_address                        st\n"
      "   0: 00000000000000000000000000000000:0801 00000000000000000000000000000000:0000 0A\n"
      "   1: 0000000000000000FFFF00000100630A:0801 0000000000000000FFFF00006500630A:0368 01\n"
      "   2: 000099FD000000000000000001000000:0801 000099FD000000000000000065000000:0369 01\n");
  got = EstablishedTo(2049, dir.path() + "/none", mapped);
  REQUIRE(got.size() == 1);
  CHECK(got[0].ToString() == "10.99.0.1:2049>10.99.0.101:872");

  CHECK(ListensOn(2049, tcp, none6));
  CHECK_FALSE(ListensOn(8080, tcp, none6));
  const std::string empty = WriteFile(dir, "empty", "  sl  local_address ...\n");
  const std::string tcp6 = WriteFile(
      dir, "tcp6b",
      "  sl  local_address                         remote_address                        st\n"
      "   0: 00000000000000000000000000000000:0801 00000000000000000000000000000000:0000 0A\n");
  CHECK(ListensOn(2049, empty, tcp6));
  CHECK_FALSE(ListensOn(2049, empty, none6));
}

TEST_CASE("nfs clients: a new active tells the others' connections at its address, no more") {
  std::vector<ControlNodeReport> nodes(3);
  nodes[0].name = "cn1";  // the old active
  nodes[0].nfs_clients = {"10.99.0.1:2049>10.99.0.101:872", "10.99.0.1:2049>10.99.0.102:700",
                          "10.99.0.11:2049>10.99.0.103:701",   // its own address: not moving
                          "10.99.0.1:8080>10.99.0.104:40000",  // not the NFS server
                          "10.99.0.1:2049>evil"};
  nodes[1].name = "cn2";  // this control node: its own report is stale
  nodes[1].nfs_clients = {"10.99.0.1:2049>10.99.0.105:702"};
  nodes[2].name = "cn3";
  std::vector<std::string> refused;
  auto tell = ConnectionsToTell(nodes, "cn2", "10.99.0.1", &refused);
  REQUIRE(tell.size() == 2);
  CHECK(tell[0].ToString() == "10.99.0.1:2049>10.99.0.101:872");
  CHECK(tell[1].ToString() == "10.99.0.1:2049>10.99.0.102:700");
  REQUIRE(refused.size() == 1);
  CHECK(refused[0].find("control node cn1: '10.99.0.1:2049>evil' is not a TCP connection") == 0);

  // However many the database says, at most kMaxTickles.
  nodes[0].nfs_clients.clear();
  for (int i = 0; i < 12000; ++i)
    nodes[0].nfs_clients.push_back("10.99.0.1:2049>10.99." + std::to_string(1 + i / 250) + "." +
                                   std::to_string(1 + i % 250) + ":800");
  CHECK(ConnectionsToTell(nodes, "cn2", "10.99.0.1").size() == kMaxTickles);
}

TEST_CASE("nfs clients: the tickle is an ACK from the server's port with a right checksum") {
  TcpConnection c{
      .local = "10.99.0.1", .local_port = 2049, .remote = "10.99.0.101", .remote_port = 872};
  const std::string s = TickleSegment(c);
  REQUIRE(s.size() == 20);
  CHECK(static_cast<uint8_t>(s[0]) == 0x08);  // source port 2049
  CHECK(static_cast<uint8_t>(s[1]) == 0x01);
  CHECK(static_cast<uint8_t>(s[2]) == 0x03);  // destination port 872
  CHECK(static_cast<uint8_t>(s[3]) == 0x68);
  CHECK(s.substr(4, 8) == std::string(8, '\0'));  // sequence and acknowledgment 0
  CHECK(static_cast<uint8_t>(s[12]) == 0x50);     // 5 words, no options
  CHECK(static_cast<uint8_t>(s[13]) == 0x10);     // ACK only
  CHECK(Verify(0x0a630001, 0x0a630065, s) == 0);
  // Another connection, another checksum, still right.
  c.remote_port = 873;
  const std::string t = TickleSegment(c);
  CHECK(t.substr(16, 2) != s.substr(16, 2));
  CHECK(Verify(0x0a630001, 0x0a630065, t) == 0);
}

}  // namespace prov
