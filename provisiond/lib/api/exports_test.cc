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

TEST_CASE("prometheus service discovery: node exporters, DCGM where NVIDIA GPUs are, labelled") {
  api_test::Fixture f;
  f.Add("gpu0", "52:54:00:00:00:01");
  f.Add("cpu0", "52:54:00:00:00:02");
  f.Add("noaddr", "52:54:00:00:00:03");
  f.CallJson("PATCH", "/api/v1/nodes/gpu0", R"({"ip":"10.99.0.10"})");
  f.CallJson("PATCH", "/api/v1/nodes/cpu0", R"({"ip":"10.99.0.11"})");
  auto nodes = f.store->ListNodes();
  for (auto& n : nodes)
    if (n.hostname == "gpu0")
      n.facts = R"({"pci":[{"slot":"0000:01:00.0","class":"0300","vendor_id":"10de",
        "device_id":"2b85","device":"GB202 [GeForce RTX 5090]"},
        {"slot":"0000:02:00.0","class":"0300","vendor_id":"10de","device_id":"2330","device":""}]})";
  nlohmann::json all = PrometheusTargets(nodes, "");
  REQUIRE(all.size() == 3);  // by hostname: cpu0 (node), gpu0 (node and dcgm); noaddr: none
  CHECK(all[0]["targets"][0] == "10.99.0.11:9100");
  CHECK(all[0]["labels"]["accelerator"] == "none");
  CHECK(all[1]["targets"][0] == "10.99.0.10:9100");
  CHECK(all[1]["labels"]["hostname"] == "gpu0");
  CHECK(all[1]["labels"]["accelerator"] == "GeForce RTX 5090,10de:2330");
  CHECK(all[1]["labels"]["state"] == "enrolled");
  CHECK(all[1]["labels"]["mac"] == "52:54:00:00:00:01");
  CHECK(all[2]["targets"][0] == "10.99.0.10:9400");
  CHECK(all[2]["labels"]["exporter"] == "dcgm");
  CHECK(PrometheusTargets(nodes, "dcgm").size() == 1);

  // Through the route, with a token (Prometheus's http_sd_configs sends one).
  HttpResponse r = f.Call("GET", "/api/v1/sd/prometheus?exporter=node");
  CHECK(r.status == 200);
  auto body = nlohmann::json::parse(r.body);
  REQUIRE(body.size() == 2);
  CHECK(body[0]["labels"]["hostname"] == "cpu0");
  CHECK(f.Call("GET", "/api/v1/sd/prometheus?exporter=snmp").status == 400);
  CHECK(f.Call("GET", "/api/v1/sd/prometheus", "", false).status == 401);
  CHECK(f.Call("GET", "/api/v1/sd/prometheus", "", true, api_test::kReadToken).status == 200);
}

}  // namespace prov
