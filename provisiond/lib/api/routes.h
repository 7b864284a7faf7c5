// provisiond's HTTP API in one table (routes.cc): every method, path pattern,
// who may call it and its handler. The handlers live in a file per noun
// (nodes.cc, profiles.cc, ...); each is `HttpResponse(const ApiContext&,
// const HttpRequest&)` with no server types, so tests call it directly.
#pragma once

#include <span>

#include "api/context.h"
#include "http/http.h"

namespace prov {

using ApiHandler = HttpResponse (*)(const ApiContext& context, const HttpRequest& request);

struct ApiRoute {
  const char* method;
  const char* pattern;  // {name} segments; the route's name in metrics
  Router::Access access;
  ApiHandler handler;
};

// Every route, in the order the router tries them.
std::span<const ApiRoute> ApiRoutes();

// Registers every route of the table on `router`, bound to `context`, which
// must outlive the router. The daemon and the fuzz harness both call this.
void AddRoutes(Router& router, const ApiContext& context);

}  // namespace prov
