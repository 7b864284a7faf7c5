// The web page: GET / is web_dir/index.html, GET /web/{file} a file of
// web_dir (names of plain files only: no path from a URL leaves web_dir).
#pragma once

#include "api/context.h"

namespace prov {

HttpResponse WebIndex(const ApiContext& context, const HttpRequest& request);
HttpResponse WebFile(const ApiContext& context, const HttpRequest& request);

}  // namespace prov
