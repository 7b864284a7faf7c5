// provisionctl image list|show|build|import|verify|rm: the boot images in
// provisiond's image store.
#include <CLI/CLI.hpp>

#include <cctype>
#include <filesystem>
#include <optional>
#include <ostream>

#include "../output/format.h"
#include "../output/image.h"
#include "common.h"
#include "table.h"
#include "wait.h"

namespace prov::ctl {
namespace {

using json = nlohmann::json;

// provisiond answers an import once both files are hashed and copied.
constexpr long kImportTimeoutS = 600;
// Verifying reads the image's os-release back over NFS.
constexpr long kVerifyTimeoutS = 120;

std::string ImagePath(const std::string& ref) {
  return kApi + "/images/" + UrlEncode(ref);
}

// Whether `name` can name an image: letters, digits, '.', '_', '-', starting
// with a letter or digit, at most 64 characters. provisiond's rule
// (images/image_catalog.h), checked here so a typo is a usage error and a '/'
// never reaches the route.
Status ValidateImageName(const std::string& name) {
  bool ok = !name.empty() && name.size() <= 64 && isalnum(static_cast<unsigned char>(name[0]));
  for (char c : name)
    ok = ok && (isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-');
  if (!ok)
    return Status::Invalid("image name '" + name + "' must be letters, digits, '.', '_' or '-'");
  return Status::Ok();
}

// A path as provisiond, on the control node, should read it: absolute, so it
// does not depend on provisiond's working directory.
std::string AbsolutePath(const std::string& path) {
  std::error_code ec;
  std::filesystem::path absolute = std::filesystem::absolute(path, ec);
  return ec ? path : absolute.lexically_normal().string();
}

int RunImageList(Context& ctx, const Args& a) {
  auto r = ctx.client.Get(kApi + "/images");
  if (!r.ok()) return Fail(ctx, r.status());
  if (a.json)
    PrintJson(ctx, *r);
  else
    ctx.out << RenderImageTable(*r);
  return kExitOk;
}

int RunImageImport(Context& ctx, const Args& a) {
  // A name with a '/' would not even reach the route: check it here.
  if (Status valid = ValidateImageName(a.target); !valid.ok())
    return UsageError(ctx, valid.message());
  if (a.kernel.empty() || a.initrd.empty())
    return UsageError(ctx, "--kernel and --initrd need a path");
  // provisiond reads the files itself: absolute paths do not depend on its
  // working directory (they are right when provisionctl runs on the control
  // node, as relative paths are meant).
  const json body = {{"kernel", AbsolutePath(a.kernel)}, {"initrd", AbsolutePath(a.initrd)}};
  auto r = ctx.client.Call("POST", kApi + "/images/" + UrlEncode(a.target) + "/import", &body,
                           kImportTimeoutS);
  if (!r.ok()) return Fail(ctx, r.status());
  if (a.json) {
    PrintJson(ctx, *r);
    return kExitOk;
  }
  ctx.out << "imported " << r->value("ref", a.target + "@" + r->value("version", std::string()))
          << " (kernel " << FormatSize(r->value("kernel_size", int64_t{0})) << ", initrd "
          << FormatSize(r->value("initrd_size", int64_t{0})) << ")\n";
  return kExitOk;
}

// The image name of a ref: "lab@0123" -> "lab".
std::string ImageName(const std::string& ref) {
  return ref.substr(0, ref.find('@'));
}

// Checks the name part of a ref here, so a typo is a usage error and a '/'
// never reaches the route.
int CheckImageRef(Context& ctx, const std::string& ref) {
  if (Status valid = ValidateImageName(ImageName(ref)); !valid.ok())
    return UsageError(ctx, valid.message());
  if (size_t at = ref.find('@'); at != std::string::npos && at + 1 == ref.size())
    return UsageError(ctx, "'" + ref + "' has no version after '@'");
  return kExitOk;
}

// "  " before every line of `text` after the first.
std::string IndentRest(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  for (size_t nl = text.find('\n'); nl != std::string::npos; nl = text.find('\n', nl + 1))
    text.insert(nl + 1, "  ");
  return text;
}

int RunImageBuild(Context& ctx, const Args& a) {
  if (Status valid = ValidateImageName(a.target); !valid.ok())
    return UsageError(ctx, valid.message());
  // The cursor from before the build starts, so none of its events is missed.
  int64_t after = 0;
  if (!a.no_follow) {
    auto status = ctx.client.Get(kApi + "/status");
    if (!status.ok()) return Fail(ctx, status.status());
    after = status->value("last_event", int64_t{0});
  }
  auto r = ctx.client.Post(ImagePath(a.target) + "/build");
  if (!r.ok()) {
    int rc = Fail(ctx, r.status());
    if (r.status().code() == Code::kConflict)
      ctx.err << "provisionctl: 'provisionctl events --follow' shows its progress\n";
    return rc;
  }
  if (a.no_follow) {
    ctx.out << "building " << a.target
            << " in provisiond: 'provisionctl events --follow' shows its progress, "
               "'provisionctl image show "
            << a.target << "' its result\n";
    return kExitOk;
  }
  return FollowBuild(ctx, a.target, after);
}

int RunImageShow(Context& ctx, const Args& a) {
  if (int rc = CheckImageRef(ctx, a.target); rc != kExitOk) return rc;
  auto r = ctx.client.Get(ImagePath(a.target));
  if (!r.ok()) return Fail(ctx, r.status());
  if (a.json) {
    PrintJson(ctx, *r);
    return kExitOk;
  }
  // Whether this is the version its name stands for: a bare name is; for
  // NAME@VERSION, ask what NAME stands for (nothing, after its current
  // version was removed).
  json current = *r;
  if (a.target.find('@') != std::string::npos && !r->contains("current")) {
    auto named = ctx.client.Get(ImagePath(r->value("name", ImageName(a.target))));
    if (named.ok())
      current = *named;
    else if (named.status().code() == Code::kNotFound)
      current = nullptr;
    else
      return Fail(ctx, named.status());
  }
  ctx.out << RenderImage(*r, current);
  return kExitOk;
}

int RunImageVerify(Context& ctx, const Args& a) {
  if (int rc = CheckImageRef(ctx, a.target); rc != kExitOk) return rc;
  auto r = ctx.client.Call("POST", ImagePath(a.target) + "/verify", nullptr, kVerifyTimeoutS);
  if (!r.ok()) return Fail(ctx, r.status());
  if (a.json)
    PrintJson(ctx, *r);
  else
    ctx.out << RenderImageVerify(*r);
  return ImageVerified(*r) ? kExitOk : kExitFailed;
}

int RunImagePrune(Context& ctx, const Args&) {
  auto r = ctx.client.Post(kApi + "/images/prune");
  if (!r.ok()) return Fail(ctx, r.status());
  const json removed = r->value("removed", json::array());
  for (const auto& ref : removed) ctx.out << "removed " << ref.get<std::string>() << "\n";
  if (removed.empty()) ctx.out << "no unused derived image beyond images.keep_derived\n";
  return kExitOk;
}

int RunImageRm(Context& ctx, const Args& a) {
  if (int rc = CheckImageRef(ctx, a.target); rc != kExitOk) return rc;
  // Resolved first, so the version removed is the one printed, even when a
  // build changes what NAME stands for meanwhile.
  auto image = ctx.client.Get(ImagePath(a.target));
  if (!image.ok()) return Fail(ctx, image.status());
  const std::string name = image->value("name", ImageName(a.target));
  const std::string ref = image->value("ref", a.target);
  bool was_current = a.target.find('@') == std::string::npos;
  if (!was_current) {
    auto named = ctx.client.Get(ImagePath(name));
    was_current = named.ok() && named->value("version", "") == image->value("version", "");
  }
  auto r = ctx.client.Delete(ImagePath(ref));
  if (!r.ok()) return Fail(ctx, r.status());
  ctx.out << "removed " << r->value("removed", ref) << "\n";
  if (was_current) {
    // What the name stands for now is provisiond's to say.
    auto now = ctx.client.Get(ImagePath(name));
    if (now.ok())
      ctx.out << name << " now stands for " << now->value("ref", name) << "\n";
    else if (now.status().code() == Code::kNotFound)
      ctx.out << name << " stands for no version until the next 'provisionctl image build " << name
              << "' or import\n";
  }
  return kExitOk;
}

}  // namespace

int FollowBuild(Context& ctx, const std::string& name, int64_t after) {
  InterruptScope interrupt(ctx.client);
  std::optional<int64_t> start;  // the time of the build's first event
  while (!interrupt.interrupted()) {
    auto r = ctx.client.Get(
        kApi + "/events" +
            QueryString({{"after", std::to_string(after)}, {"wait", std::to_string(kEventWaitS)}}),
        kEventWaitS + 15);
    if (interrupt.interrupted()) break;
    if (!r.ok())
      return Fail(ctx, r.status(),
                  "lost the build of " + name + " (provisionctl image show " + name +
                      " tells whether it goes on): ");
    for (const auto& event : r->value("events", json::array())) {
      auto build = ParseImageBuildEvent(event);
      if (!build || build->image != name) continue;
      if (!start) start = build->time_ms;
      const int64_t elapsed = build->time_ms - *start;
      if (build->kind == "image-build") {
        ctx.out << RenderBuildProgress(build->text, elapsed) << std::flush;
      } else if (build->kind == "image-built") {
        ctx.out << "built " << build->text << " in " << FormatDuration(elapsed) << "\n";
        return kExitOk;
      } else {
        ctx.err << "provisionctl: image " << name << " was not built: " << IndentRest(build->text)
                << "\n";
        return kExitFailed;
      }
    }
    after = r->value("next", after);
  }
  ctx.err << (ctx.interactive ? "\n" : "") << "provisionctl: stopped following; the build of "
          << name << " goes on in provisiond ('provisionctl events --follow' shows it, "
          << "'provisionctl image show " << name << "' its result)\n";
  return kExitInterrupted;
}

std::vector<Verb> ImageVerbs() {
  return {
      {"image list", "image list [--json]", "List the boot images provisiond can serve",
       R"(Lists every version in provisiond's image store as a table: NAME, VERSION (the
first 16 hex digits of the hash of its content: the root tree of a built image,
the kernel and initrd of an imported one), CURRENT ("yes" on the version NAME
stands for: the one built or imported last), the sizes of KERNEL and INITRD,
ROOT (whether it has a root tree to serve over NFS) and CREATED. A profile
names an image as NAME, its current version, or as NAME@VERSION.

Examples:
  provisionctl image list
  provisionctl image list --json | jq -r '.images[] | select(.current) | .ref')",
       [](CLI::App& c, Args& a) { AddJsonFlag(c, a); }, RunImageList},

      {"image show", "image show REF [--json]", "Show one image version and how it was built",
       R"(Shows one version of an image, named as NAME (the version NAME stands for) or
NAME@VERSION: whether it is NAME's current version (and if not, which one is),
the sizes of its kernel (with the kernel's file name) and initrd, whether it has
a root tree, its content hash, when it was made, and whether a build of NAME
runs now. For a built image it shows how it was built, from its image.json: the
suite and mirror, the packages of the manifest, the files and size of the root
tree, how long the build took, and the hash of the manifest it was built from;
an imported image says so instead. --json prints the API's image object.

Examples:
  provisionctl image show lab
  provisionctl image show lab@0123456789abcdef
  provisionctl image show lab --json | jq .build.packages)",
       [](CLI::App& c, Args& a) {
         c.add_option("ref", a.target, "The image: NAME or NAME@VERSION")
             ->type_name("REF")
             ->required();
         AddJsonFlag(c, a);
       },
       RunImageShow},

      {"image build", "image build NAME [--no-follow]",
       "Build an image from its manifest (images/NAME/image.yaml) and follow the build",
       R"(Asks provisiond to build the image NAME from its manifest in provisiond's images
directory (images/NAME/image.yaml: distribution, suite, mirror, packages,
files): mmdebstrap makes a root tree, provisiond adds its phone-home agent and
builds a netboot initrd for it, and the result becomes a new version of NAME
and the one NAME stands for (building unchanged content again gives the same
version). The build runs in provisiond, in the background, and takes minutes.

provisionctl follows it: each progress line is printed with the time since the
build started, "[ 12.3s] mmdebstrap: I: downloading packages with apt...", until
the build ends with "built NAME@VERSION in 3m05s" (exit status 0) or with the
reason it failed (exit status 1). Ctrl-C stops following (exit status 130), not
the build, which goes on in provisiond; 'provisionctl events --follow' shows its
progress, 'provisionctl image show NAME' its result. --no-follow starts the build
and returns at once. A build of an image that is being built already is refused.

Examples:
  provisionctl image build lab
  provisionctl image build debian-amd-npu --no-follow)",
       [](CLI::App& c, Args& a) {
         c.add_option("name", a.target, "The image's name (its manifest is images/NAME/image.yaml)")
             ->type_name("NAME")
             ->required();
         c.add_flag("--no-follow", a.no_follow,
                    "Start the build and return, without following its progress");
       },
       RunImageBuild},

      {"image import", "image import NAME --kernel PATH --initrd PATH [--json]",
       "Import a kernel and an initrd as a version of a boot image",
       R"(Copies a kernel and an initrd into provisiond's image store as a version of the
image NAME (letters, digits, '.', '_', '-'), named by the hash of both files,
and makes it the version NAME stands for. Importing the same files again
changes nothing. provisiond reads the files itself, and only from its
import_dir (default <data_dir>/import): copy them there first. The paths are
paths on the control node; relative ones are made absolute against the
current directory before they are sent. Only a Linux kernel and an initramfs
are taken (checked by their headers).

Examples:
  cp /boot/vmlinuz-6.1.0-18-amd64 build/initrd.img /var/lib/provisiond/import/
  provisionctl image import lab --kernel /var/lib/provisiond/import/vmlinuz-6.1.0-18-amd64 \
      --initrd /var/lib/provisiond/import/initrd.img)",
       [](CLI::App& c, Args& a) {
         c.add_option("name", a.target, "The image's name")->type_name("NAME")->required();
         c.add_option("--kernel", a.kernel, "The kernel (a path under provisiond's import_dir)")
             ->type_name("PATH")
             ->required();
         c.add_option("--initrd", a.initrd, "The initrd (a path under provisiond's import_dir)")
             ->type_name("PATH")
             ->required();
         AddJsonFlag(c, a);
       },
       RunImageImport},

      {"image verify", "image verify REF [--json]",
       "Check that an image version can be served: kernel, initrd, root, NFS export",
       R"(Asks provisiond to check one version of an image (NAME, the version NAME stands
for, or NAME@VERSION) as nodes would use it: its kernel and its initrd are
there, whether it has a root tree, and for one with a root tree whether
provisiond's NFS server exports it (its os-release is read back over NFS). Each
check prints as "ok", "FAIL" or "-" (does not apply: an image without a root
tree, or provisiond without an NFS server), with what was found, then the
kernel arguments that mount the root, and a last line saying whether the image
can be served. The exit status is 1 when it cannot, so a script can gate on it.

Examples:
  provisionctl image verify lab
  provisionctl image verify lab@0123456789abcdef --json | jq -r .nfs)",
       [](CLI::App& c, Args& a) {
         c.add_option("ref", a.target, "The image: NAME or NAME@VERSION")
             ->type_name("REF")
             ->required();
         AddJsonFlag(c, a);
       },
       RunImageVerify},

      {"image rm", "image rm REF", "Remove an image version that nothing uses",
       R"(Removes one version of an image from provisiond's image store: NAME@VERSION, or
NAME for the version NAME stands for. provisiond refuses (exit status 1, with
the reason) while a profile names that version or a node is assigned it or runs
it; apply another profile or move the nodes first. The version removed is
printed in full; when it was the version NAME stood for, what NAME stands for
now is printed too.

Examples:
  provisionctl image rm lab@0123456789abcdef
  provisionctl image list --json | jq -r '.images[] | select(.current | not) | .ref' |
    xargs -n1 provisionctl image rm)",
       [](CLI::App& c, Args& a) {
         c.add_option("ref", a.target, "The version to remove: NAME@VERSION, or NAME")
             ->type_name("REF")
             ->required();
       },
       RunImageRm},

      {"image prune", "image prune", "Remove the derived images nothing uses",
       R"(Removes the versions of derived images (<image>.baked: made by profiles' bake
playbooks, see profile bake) that no node boots or runs and no profile names,
but for the newest images.keep_derived of each (2 by default; provisiond's
config). provisiond does the same after each bake. Base images are left alone
(image rm removes one).

Examples:
  provisionctl image prune)",
       [](CLI::App&, Args&) {}, RunImagePrune},
  };
}

}  // namespace prov::ctl
