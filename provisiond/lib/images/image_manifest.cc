#include "images/image_manifest.h"

#include <regex>
#include <string_view>

#include "base/file_util.h"
#include "images/image_catalog.h"
#include "images/source.h"

namespace prov {

std::string ImageManifest::Dir() const {
  const size_t slash = file.rfind('/');
  return slash == std::string::npos ? std::string(".") : file.substr(0, slash);
}

std::string ImageManifest::Beside(const std::string& name) const {
  return Dir() + "/" + name;
}

namespace {

// A kernel module's name: [a-z0-9_-]+.
bool IsModuleName(std::string_view s) {
  return !s.empty() &&
         s.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_-") == std::string_view::npos;
}

// Names in a manifest, checked character by character: std::regex recursed
// once per character of a name and overflowed the stack on a long one.
bool AllOf(std::string_view s, std::string_view chars) {
  return !s.empty() && s.find_first_not_of(chars) == std::string_view::npos;
}

}  // namespace

bool IsDebianPackageName(std::string_view p) {
  const size_t slash = p.find('/');
  const std::string_view name = p.substr(0, slash);
  if (!AllOf(name, "abcdefghijklmnopqrstuvwxyz0123456789+.-") || name[0] == '+' || name[0] == '.' ||
      name[0] == '-')
    return false;
  return slash == std::string_view::npos ||
         AllOf(p.substr(slash + 1), "abcdefghijklmnopqrstuvwxyz0123456789-");
}

void ReadPackageKeys(MapReader& top, ImageManifest& m, std::vector<std::string>& packages,
                     bool kernel_required) {
  top.GetString("kernel_package", m.kernel_package, kernel_required);
  top.GetStringList("packages", packages);
  for (const auto& p : packages)
    if (!IsDebianPackageName(p))
      top.errors().Add(top.Raw("packages"), "'" + p + "' is not a Debian package name");
  if (!m.kernel_package.empty() && !IsDebianPackageName(m.kernel_package))
    top.errors().Add(top.Raw("kernel_package"),
                     "'" + m.kernel_package + "' is not a Debian package name");
}

Result<ImageManifest> ParseImageManifest(const std::string& text, const std::string& file,
                                         const std::string& expected_name) {
  YamlErrors errors(file);
  YAML::Node root = ParseYaml(text, errors);
  if (!errors.empty()) return errors.ToStatus();
  MapReader top(root, errors, "image manifest");
  if (!top.valid()) return errors.ToStatus();
  ImageManifest m;
  m.file = file;
  if (top.GetString("name", m.name, true)) {
    Status s = ValidateImageName(m.name);
    if (!s.ok())
      errors.Add(top.Raw("name"), s.message());
    else if (!expected_name.empty() && m.name != expected_name)
      errors.Add(top.Raw("name"),
                 "name '" + m.name + "' does not match its directory '" + expected_name + "'");
  }
  top.GetString("description", m.description);
  if (top.GetString("architecture", m.architecture) && m.architecture != "amd64" &&
      m.architecture != "arm64")
    errors.Add(top.Raw("architecture"), "architecture must be amd64 or arm64");
  // The source's own keys, read by the source (images/source.h). Without
  // source: it is the default, which exists: a refusal names a given one.
  top.GetString("source", m.source);
  if (Status s = ParseSourcePart(m.source, top, m); !s.ok())
    errors.Add(top.Raw("source"), s.message());
  top.GetStringList("initrd_modules", m.initrd_modules);
  for (const auto& mod : m.initrd_modules)
    if (!IsModuleName(mod))
      errors.Add(top.Raw("initrd_modules"), "'" + mod + "' is not a kernel module name");
  top.GetMapList("files", [&](MapReader& f) {
    ImageFile file_entry;
    if (f.GetString("path", file_entry.path, true) &&
        (file_entry.path.empty() || file_entry.path[0] != '/' ||
         file_entry.path.find("..") != std::string::npos))
      f.errors().Add(f.Raw("path"),
                     "file path '" + file_entry.path + "' must be absolute, without '..'");
    f.GetString("content", file_entry.content, true);
    if (f.GetString("mode", file_entry.mode) &&
        !std::regex_match(file_entry.mode, std::regex("^0?[0-7]{3}$")))
      f.errors().Add(f.Raw("mode"), "mode '" + file_entry.mode + "' must be octal, like \"0644\"");
    m.files.push_back(std::move(file_entry));
  });
  top.Finish();
  if (!errors.empty()) return errors.ToStatus();
  m.sha256 = Sha256Hex(text);
  return m;
}

Result<ImageManifest> LoadImageManifest(const std::string& images_dir, const std::string& name) {
  Status s = ValidateImageName(name);
  if (!s.ok()) return s;
  const std::string path = images_dir + "/" + name + "/image.yaml";
  auto text = ReadFile(path);
  if (!text.ok())
    return Status::NotFound("no image manifest '" + name + "' (looked for " + path + ")");
  return ParseImageManifest(*text, path, name);
}

}  // namespace prov
