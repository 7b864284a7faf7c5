#include "api/exports.h"

#include <doctest/doctest.h>

#include "api/test_fixture.h"

namespace prov {
namespace {

HttpRequest ExportRequest(const std::string& format, const std::string& nodes = "") {
  HttpRequest r;
  r.method = "GET";
  r.params["format"] = format;
  if (!nodes.empty()) r.query["nodes"] = nodes;
  return r;
}

}  // namespace

TEST_CASE("exports: hostfiles of the selected nodes, unknown formats named") {
  api_test::Fixture f;
  CHECK(GetExport(f.context, ExportRequest("hostfile")).status == 404);  // no node yet
  f.Add("node0", "52:54:00:00:00:01");
  f.Add("node1", "52:54:00:00:00:02");
  f.CallJson("PATCH", "/api/v1/nodes/node0", R"({"ip":"10.99.0.10"})");
  // "all" is the nodes with an address; a hostlist names them.
  CHECK(GetExport(f.context, ExportRequest("hostfile")).body == "node0\n");
  CHECK(GetExport(f.context, ExportRequest("hostfile", "node[0-1]")).body == "node0\nnode1\n");
  CHECK(GetExport(f.context, ExportRequest("hostfile-ip", "node[0-1]")).body == "10.99.0.10\n");
  HttpResponse bad = GetExport(f.context, ExportRequest("csv"));
  CHECK(bad.status == 400);
  CHECK(bad.body.find("unknown export format 'csv'") != std::string::npos);
  auto slurm = Export("slurm-nodes", f.store->ListNodes());
  REQUIRE(slurm.ok());
  CHECK(slurm->find("NodeName=node0 NodeAddr=10.99.0.10 State=UNKNOWN\n") != std::string::npos);
}

}  // namespace prov
