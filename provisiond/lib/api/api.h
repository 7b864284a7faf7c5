// The REST API under /api/v1 and /metrics: one route table over the
// inventory. Reads are open (the web page is read-only without a token);
// every write needs a bearer token.
#pragma once

#include <functional>
#include <memory>

#include "http/http.h"
#include "profiles/inventory.h"

namespace prov {

struct ApiOptions {
  std::string version = PROVISION_VERSION;
  int64_t max_event_wait_ms = 25000;  // long-poll cap for GET /events?wait=
  // Called after a profile was applied: starts configuring its nodes and
  // returns what it started (the "configure" field of the answer).
  std::function<nlohmann::json(const Plan&, const std::string& who)> after_apply = nullptr;
};

// Registers every API route on `router`. `inventory` must outlive it.
void AddApiRoutes(Router& router, Inventory& inventory, const ApiOptions& options = {});

// Serves the web page: GET / is web_dir/index.html, GET /web/<file> a file of
// web_dir (names of plain files only: no path from a URL leaves web_dir).
void AddWebRoutes(Router& router, const std::string& web_dir);

}  // namespace prov
