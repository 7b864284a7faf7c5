// Shared by the fuzz targets: a property check that aborts (so libFuzzer and
// the replay both report it), and the API without sockets or threads.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "api/context.h"
#include "api/routes.h"
#include "base/temp_dir.h"
#include "boot/boot.h"
#include "hello/phonehome.h"
#include "images/image_catalog.h"
#include "images/image_service.h"
#include "profiles/inventory.h"
#include "store/store.h"

#define FUZZ_CHECK(cond, what)                                                                     \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      std::fprintf(stderr, "fuzz property failed at %s:%d: %s\n  %s\n", __FILE__, __LINE__, #cond, \
                   std::string(what).c_str());                                                     \
      std::abort();                                                                                \
    }                                                                                              \
  } while (0)

namespace prov::fuzz {

inline constexpr const char* kAdminToken = "0123456789abcdef0123456789abcdef";
inline constexpr const char* kNodeMac = "52:54:00:00:00:01";

// provisiond's routes over an in-memory store: the daemon's route table
// (api/routes.cc, through the same AddRoutes) except the routes that leave
// the process (power, image build/import/verify/delete, preflight, and
// configure, cmd and playbook runs over SSH). Node n0 (kNodeMac, profile lab)
// is enrolled; its token is node_token. Nothing here starts a thread.
//
// Built once per process (parsing the lab profile for n0's enrollment is most
// of the cost) and put back before every input that follows one that wrote
// to the store: the store's content is restored from a copy taken after the
// enrollment, the inventory forgets the profile versions it had looked up,
// and the boot service (its recent-stage memory, which changes only with a
// write) is made anew. Inputs are thus independent: a crash reproduces from
// its input alone.
class ApiHarness {
 public:
  // The harness, in the state every input starts from.
  static ApiHarness& Fresh();
  ~ApiHarness();
  HttpResponse Handle(HttpRequest& request);
  const std::string& node_token() const { return node_token_; }
  Inventory& inventory() { return *inventory_; }

 private:
  ApiHarness();
  void Reset();

  TempDir snapshots_{"fuzz-snapshots"};
  std::unique_ptr<Store> store_;
  std::unique_ptr<Store> pristine_;  // store_'s content after the enrollment
  std::unique_ptr<Inventory> inventory_;
  std::unique_ptr<BootService> boot_;
  std::unique_ptr<PhoneHome> phonehome_;
  std::unique_ptr<ImageService> image_service_;
  ApiContext context_;
  std::unique_ptr<Router> router_;
  BootSettings boot_settings_;
  int64_t clean_changes_ = -1;  // store_->ChangeCount() right after a restore
  std::string node_token_;
};

// Checks what every answer must satisfy: a real HTTP status, never an
// exception turned into a 500, and a JSON body that parses.
void CheckResponse(const HttpRequest& request, const HttpResponse& response);

}  // namespace prov::fuzz
