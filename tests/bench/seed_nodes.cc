// bench_seed_nodes: fills a NEW provisiond database with enrolled nodes for
// api_list_bench.sh, through prov::Store (InsertNode plus the "enrolled"
// event that Inventory::Enroll writes), in one transaction.
//
//   bench_seed_nodes DB_PATH [COUNT]
//
// Only for a database no daemon has open: it refuses a path that exists, so
// it can never write into a live inventory. Nodes are node00000..node<COUNT-1>
// with MACs 52:54:00:00:HH:LL and IPs 10.1.x.y, all in state enrolled.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>

#include "store/store.h"

namespace {

std::string Hostname(int i) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "node%05d", i);
  return buf;
}

std::string Mac(int i) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "52:54:00:%02x:%02x:%02x", (i >> 16) & 0xff, (i >> 8) & 0xff,
                i & 0xff);
  return buf;
}

std::string Ip(int i) {
  return "10.1." + std::to_string(i / 200) + "." + std::to_string(i % 200 + 10);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    std::cerr << "usage: " << argv[0] << " DB_PATH [COUNT]   (COUNT: 1..99999, default 10000)\n";
    return 2;
  }
  const std::string path = argv[1];
  int count = 10000;
  if (argc == 3) {
    char* end = nullptr;
    long v = std::strtol(argv[2], &end, 10);
    if (!*argv[2] || *end || v < 1 || v > 99999) {
      std::cerr << "bench_seed_nodes: COUNT must be a number from 1 to 99999\n";
      return 2;
    }
    count = static_cast<int>(v);
  }
  std::error_code ec;
  if (std::filesystem::exists(path, ec) || ec) {
    std::cerr << "bench_seed_nodes: " << path
              << " exists; this tool only seeds a new database that no daemon has open\n";
    return 1;
  }
  auto store = prov::Store::Open(path);
  if (!store.ok()) {
    std::cerr << "bench_seed_nodes: " << store.status().message() << "\n";
    return 1;
  }
  auto start = std::chrono::steady_clock::now();
  prov::Status s = (*store)->Transact([&](prov::StoreTx& tx) -> prov::Status {
    for (int i = 0; i < count; ++i) {
      prov::NodeRecord node;
      node.hostname = Hostname(i);
      node.mac = Mac(i);
      node.ip = Ip(i);
      node.state = prov::NodeState::kEnrolled;
      auto inserted = tx.InsertNode(node);
      if (!inserted.ok()) return inserted.status();
      prov::EventRecord e{0,
                          0,
                          inserted->id,
                          inserted->name(),
                          "enrolled",
                          "mac " + inserted->mac + ", ip " + inserted->ip,
                          "bench"};
      prov::Status a = tx.AppendEvent(e);
      if (!a.ok()) return a;
    }
    return prov::Status::Ok();
  });
  if (!s.ok()) {
    std::cerr << "bench_seed_nodes: " << s.message() << "\n";
    return 1;
  }
  double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  std::printf("seeded %d nodes into %s in %.0f ms\n", count, path.c_str(), ms);
  return 0;
}
