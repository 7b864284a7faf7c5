#include "api/web.h"

#include <doctest/doctest.h>

#include "api/routes.h"
#include "base/file_util.h"
#include "base/temp_dir.h"

namespace prov {

TEST_CASE("web routes: index at /, plain files only") {
  TempDir dir("provision-web");
  REQUIRE(WriteFileAtomic(dir.path() + "/index.html", "<html>inventory</html>").ok());
  REQUIRE(WriteFileAtomic(dir.path() + "/app.js", "let x = 1;").ok());
  ApiContext context;
  context.web_dir = dir.path();
  Router router(nullptr);
  AddRoutes(router, context);
  auto get = [&](const std::string& path) {
    HttpRequest r;
    r.method = "GET";
    r.path = path;
    return router.Handle(r);
  };
  HttpResponse index = get("/");
  CHECK(index.status == 200);
  CHECK(index.file_path == dir.path() + "/index.html");
  CHECK(index.content_type == "text/html; charset=utf-8");
  CHECK(get("/web/app.js").content_type == "text/javascript; charset=utf-8");
  CHECK(get("/web/nope.js").status == 404);
  CHECK(get("/web/..").status == 404);
  CHECK(get("/web/.hidden").status == 404);
  CHECK(get("/web/../../etc/passwd").status == 404);
}

}  // namespace prov
