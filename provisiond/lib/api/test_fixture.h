// For the API's tests (*_test.cc here): a provisiond without sockets, the
// store in memory and the shipped profiles, every route of the table
// registered; only the inventory is behind it, so the tests call the routes
// that need no more (the others get their own fixtures).
#pragma once

#include <doctest/doctest.h>

#include <memory>
#include <string>

#include "api/routes.h"
#include "base/temp_dir.h"
#include "profiles/inventory.h"
#include "store/store.h"
#include "store/testing/test_database.h"

namespace prov::api_test {

inline const char* kToken = "0123456789abcdef0123456789abcdef";      // alice, admin
inline const char* kReadToken = "fedcba9876543210fedcba9876543210";  // rita, read

struct Fixture {
  std::unique_ptr<Store> store = std::move(*Store::Open(::prov::testing::TestDatabase()));
  TempDir snapshots{"snapshots"};
  Inventory inventory{*store, PROVISION_SOURCE_DIR "/profiles", PROVISION_SOURCE_DIR "/playbooks",
                      snapshots.path()};
  Router router{std::make_shared<const TokenSet>(
      *TokenSet::Parse(std::string(kToken) + " alice\n" + kReadToken + " rita read\n", "tokens"))};
  ApiContext context;

  Fixture() {
    context.inventory = &inventory;
    context.route_metrics = &router.metrics();
    AddRoutes(router, context);
  }

  HttpResponse Call(const std::string& method, const std::string& target,
                    const std::string& body = "", bool auth = true, const char* token = kToken) {
    HttpRequest r;
    r.method = method;
    SplitTarget(target, r.path, r.query);
    r.body = body;
    r.remote = "127.0.0.1";  // plain HTTP from loopback, as provisionctl on the control node
    if (auth) r.headers["authorization"] = std::string("Bearer ") + token;
    return router.Handle(r);
  }
  nlohmann::json CallJson(const std::string& method, const std::string& target,
                          const std::string& body = "", int expect = 200) {
    HttpResponse r = Call(method, target, body);
    INFO(method << " " << target << " -> " << r.body);
    CHECK(r.status == expect);
    return nlohmann::json::parse(r.body);
  }
  void Add(const std::string& host, const std::string& mac) {
    CallJson("POST", "/api/v1/nodes", nlohmann::json{{"hostname", host}, {"mac", mac}}.dump(), 201);
  }
};

}  // namespace prov::api_test
