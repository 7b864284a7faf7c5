// The boot path seen from the API: what nodes fetch and send while they
// boot (their boot scripts and files, hello with facts, stage reports; no
// API token: nodes use their own) and `node why` reading it back.
#pragma once

#include "api/context.h"

namespace prov {

// GET /boot/{script}: the boot loader's scripts (start.ipxe, {mac}.ipxe).
HttpResponse ServeBootScript(const ApiContext& context, const HttpRequest& request);
// GET /boot/{mac}/{file}: the node's kernel, initrd and overlay.
HttpResponse ServeBootFile(const ApiContext& context, const HttpRequest& request);
// POST /api/v1/nodes/{node}/hello: phone-home with facts; `booted` starts
// the node's configuration (on_booted).
HttpResponse NodeHello(const ApiContext& context, const HttpRequest& request);
// POST /api/v1/nodes/{node}/report: a boot stage or error from the initrd.
HttpResponse NodeReport(const ApiContext& context, const HttpRequest& request);
// GET /api/v1/nodes/{node}/why: the boot timeline and where it stopped.
HttpResponse NodeWhy(const ApiContext& context, const HttpRequest& request);
// GET /api/v1/nodes/{node}/boots?count=2: the newest `count` (1 to 10) boot
// attempts, newest first, from the node's newest 20,000 events (the web
// page's waterfall; store/boot_history.h).
HttpResponse NodeBoots(const ApiContext& context, const HttpRequest& request);

}  // namespace prov
