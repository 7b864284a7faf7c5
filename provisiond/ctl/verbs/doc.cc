// provisionctl doc: every command at length, from the same table as --help.
#include <CLI/CLI.hpp>

#include "../cli.h"
#include "table.h"

namespace prov::ctl {
namespace {

int RunDoc(Context& ctx, const Args&) {
  ctx.out << RenderDoc(ctx.cli);
  return kExitOk;
}

}  // namespace

std::vector<Verb> DocVerbs() {
  return {
      {"doc", "doc", "Describe every command at length",
       R"(Prints this long-form description of every command, its options and examples;
the same text --help shows per command comes from the same table.

Example:
  provisionctl doc | less)",
       [](CLI::App&, Args&) {}, RunDoc},
  };
}

}  // namespace prov::ctl
