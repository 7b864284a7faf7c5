// The table of boot loaders: each is implemented in its own file and listed
// here once (explicitly: a loader nothing names would not be linked in from
// the static library).
#include "boot/loader.h"

#include "base/file_util.h"
#include "base/mac.h"

namespace prov {

// One line per loader: its factory, defined in boot/<name>.cc.
Result<std::unique_ptr<BootLoader>> CreateIpxeLoader(const LoaderSettings& settings);  // ipxe.cc
Result<std::unique_ptr<BootLoader>> CreateGrubLoader(const LoaderSettings& settings);  // grub.cc

namespace {

// By the chain each serves; the names are store/boot_stage.h's (LoaderName).
struct LoaderEntry {
  BootChain chain;
  Result<std::unique_ptr<BootLoader>> (*create)(const LoaderSettings&);
};

constexpr LoaderEntry kLoaders[] = {
    {BootChain::kIpxe, CreateIpxeLoader},
    {BootChain::kSigned, CreateGrubLoader},
};

}  // namespace

Status ScriptTemplates::Load(const std::string& dir, const std::vector<std::string>& names,
                             const std::string& suffix) {
  dir_ = dir;
  suffix_ = suffix;
  for (const auto& name : names) {
    auto text = ReadFile(Path(name));
    if (!text.ok())
      return Status::NotFound("boot script template missing: " + text.status().message());
    text_[name] = *text;
  }
  return Status::Ok();
}

Result<std::string> ScriptTemplates::Render(const std::string& name, const ScriptContext& c,
                                            TemplateValues values) const {
  values["boot_url"] = c.boot_url;
  values["delay"] = std::to_string(c.retry_delay_s);
  // The node's own values, for every loader's per-node scripts (empty in a
  // start script).
  values.emplace("mac", c.mac);
  values.emplace("mac_hyphen", HyphenatedMac(c.mac));
  values.emplace("hostname", c.hostname);
  values.emplace("name", c.name);
  values.emplace("state", c.state);
  return RenderTemplate(text_.at(name), values, Path(name));
}

Result<std::unique_ptr<BootLoader>> CreateBootLoader(std::string_view name,
                                                     const LoaderSettings& settings) {
  const std::optional<BootChain> chain = ParseLoaderName(name);
  for (const auto& entry : kLoaders)
    if (chain == entry.chain) return entry.create(settings);
  std::string known;
  for (std::string_view n : BootLoaderNames())
    known += (known.empty() ? "" : ", ") + std::string(n);
  return Status::Invalid("unknown boot loader '" + std::string(name) + "' (" + known + ")");
}

std::vector<std::string_view> BootLoaderNames() {
  std::vector<std::string_view> out;
  for (const auto& entry : kLoaders) out.push_back(LoaderName(entry.chain));
  return out;
}

}  // namespace prov
