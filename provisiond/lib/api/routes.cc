// Every route provisiond serves, top to bottom. Access: kOpen (nodes as they
// boot, which prove who they are by their own credential, and the web page's
// files, which hold no data), kRead (a token of either role, else 401),
// kAdmin (an `admin` token: 401 without a token, 403 with a `read` one). A path that
// matches with another method is a 405 whose Allow lists the methods in the
// order below; a route's pattern is its name in /metrics.
#include "api/routes.h"

#include "api/boot.h"
#include "api/cmd.h"
#include "api/events.h"
#include "api/exports.h"
#include "api/images.h"
#include "api/nodes.h"
#include "api/power.h"
#include "api/profiles.h"
#include "api/runs.h"
#include "api/status_metrics.h"
#include "api/web.h"

namespace prov {
namespace {

using enum Router::Access;

// clang-format off
constexpr ApiRoute kRoutes[] = {
  // method  path pattern                          access  handler             file
  // How provisiond stands.
  {"GET",    "/api/v1/status",                     kRead,  GetStatus},         // status_metrics
  {"GET",    "/api/v1/preflight",                  kRead,  GetPreflight},      // status_metrics
  {"GET",    "/metrics",                           kRead,  GetMetrics},        // status_metrics
  // Nodes.
  {"GET",    "/api/v1/nodes",                      kRead,  ListNodes},         // nodes
  {"POST",   "/api/v1/nodes",                      kAdmin, EnrollNode},        // nodes
  {"GET",    "/api/v1/nodes/{node}",               kRead,  ShowNode},          // nodes
  {"PATCH",  "/api/v1/nodes/{node}",               kAdmin, ChangeNode},        // nodes
  {"DELETE", "/api/v1/nodes/{node}",               kAdmin, RetireNode},        // nodes
  {"GET",    "/api/v1/nodes/{node}/why",           kRead,  NodeWhy},           // boot
  {"GET",    "/api/v1/nodes/{node}/console",       kRead,  NodeConsole},       // events
  {"GET",    "/api/v1/nodes/{node}/boots",         kRead,  NodeBoots},         // boot
  {"POST",   "/api/v1/nodes/{node}/power",         kAdmin, PowerNode},         // power
  {"POST",   "/api/v1/nodes/{node}/configure",     kAdmin, ConfigureNode},     // runs
  {"POST",   "/api/v1/nodes/{node}/storage/wipe",  kAdmin, AllowStorageWipe},  // nodes
  {"POST",   "/api/v1/nodes/{node}/adopt",         kAdmin, AdoptNode},         // nodes
  // Profiles.
  {"GET",    "/api/v1/profiles",                   kRead,  ListProfiles},      // profiles
  {"GET",    "/api/v1/profiles/{version}",         kRead,  ShowProfile},       // profiles
  {"GET",    "/api/v1/profiles/{version}/plan",    kRead,  ShowPlan},          // profiles
  {"POST",   "/api/v1/profiles/{version}/apply",   kAdmin, ApplyProfile},      // profiles
  {"POST",   "/api/v1/profiles/{version}/bake",    kAdmin, BakeProfile},       // profiles
  // Images.
  {"GET",    "/api/v1/images",                     kRead,  ListImages},        // images
  {"GET",    "/api/v1/images/{ref}",               kRead,  ShowImage},         // images
  {"DELETE", "/api/v1/images/{ref}",               kAdmin, RemoveImage},       // images
  {"POST",   "/api/v1/images/prune",               kAdmin, PruneImages},       // images
  {"POST",   "/api/v1/images/{name}/build",        kAdmin, StartImageBuild},   // images
  {"POST",   "/api/v1/images/{name}/import",       kAdmin, ImportImage},       // images
  {"POST",   "/api/v1/images/{ref}/verify",        kAdmin, VerifyImage},       // images
  {"GET",    "/api/v1/images/{ref}/archive",       kAdmin, ImageArchiveFile},  // images
  // Secrets: names and sizes out, values only in.
  {"GET",    "/api/v1/secrets",                    kRead,  ListSecrets},       // profiles
  {"PUT",    "/api/v1/secrets/{name}",             kAdmin, SetSecret},         // profiles
  {"DELETE", "/api/v1/secrets/{name}",             kAdmin, RemoveSecret},      // profiles
  // Events.
  {"GET",    "/api/v1/events",                     kRead,  ListEvents},        // events
  {"GET",    "/api/v1/history/states",             kRead,  StateCountsOverTime}, // status_metrics
  // Configuration over SSH, commands, exports.
  {"GET",    "/api/v1/runs",                       kRead,  ListRuns},          // runs
  {"GET",    "/api/v1/runs/{id}",                  kRead,  ShowRun},           // runs
  {"POST",   "/api/v1/playbook-runs",              kAdmin, StartPlaybookRuns}, // runs
  {"POST",   "/api/v1/playbook-checks",            kAdmin, CheckPlaybook},     // runs
  {"POST",   "/api/v1/health-checks",              kAdmin, StartHealthChecks}, // runs
  {"POST",   "/api/v1/cmd",                        kAdmin, RunCommand},        // cmd
  {"POST",   "/api/v1/gather",                     kAdmin, GatherFiles},       // cmd
  {"GET",    "/api/v1/export/{format}",            kRead,  GetExport},         // exports
  {"GET",    "/api/v1/sd/prometheus",              kRead,  GetPrometheusTargets}, // exports
  // From nodes as they boot.
  {"GET",    "/boot/{script}",                     kOpen,  ServeBootScript},   // boot
  {"GET",    "/boot/{mac}/{file}",                 kOpen,  ServeBootFile},     // boot
  {"POST",   "/api/v1/nodes/{node}/hello",         kOpen,  NodeHello},         // boot
  {"POST",   "/api/v1/nodes/{node}/report",        kOpen,  NodeReport},        // boot
  // The web page.
  {"GET",    "/",                                  kOpen,  WebIndex},          // web
  {"GET",    "/web/{file}",                        kOpen,  WebFile},           // web
};
// clang-format on

}  // namespace

std::span<const ApiRoute> ApiRoutes() {
  return kRoutes;
}

void AddRoutes(Router& router, const ApiContext& context) {
  for (const ApiRoute& route : kRoutes)
    router.Add(route.method, route.pattern, route.access,
               [&context, handler = route.handler](const HttpRequest& request) {
                 return handler(context, request);
               });
}

}  // namespace prov
