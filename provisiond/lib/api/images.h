// /api/v1/images: the built versions, one version (with its build record),
// building, importing, verifying (over NFS where there is a server) and
// removing one.
#pragma once

#include "api/context.h"

namespace prov {

HttpResponse ListImages(const ApiContext& context, const HttpRequest& request);
HttpResponse ShowImage(const ApiContext& context, const HttpRequest& request);
HttpResponse RemoveImage(const ApiContext& context, const HttpRequest& request);
// POST /images/prune: removes the derived images nothing uses, but the newest
// images.keep_derived of each base (ImageService::PruneDerived).
HttpResponse PruneImages(const ApiContext& context, const HttpRequest& request);
// 202: the build goes on in the background; its progress is events.
HttpResponse StartImageBuild(const ApiContext& context, const HttpRequest& request);
HttpResponse ImportImage(const ApiContext& context, const HttpRequest& request);
HttpResponse VerifyImage(const ApiContext& context, const HttpRequest& request);
// GET /images/{ref}/archive: the version as one tar (images/image_archive.h),
// for a standby control node to copy; its SHA-256 in X-Archive-SHA256; Range
// lets a copy go on where it stopped. 409 with one control node.
HttpResponse ImageArchiveFile(const ApiContext& context, const HttpRequest& request);

}  // namespace prov
