#include "images/image_manifest.h"

#include <regex>

#include "base/file_util.h"
#include "base/yaml_reader.h"
#include "images/image_catalog.h"

namespace prov {
namespace {

// Names in a manifest, checked character by character: std::regex recursed
// once per character of a name and overflowed the stack on a long one.
constexpr std::string_view kSuiteChars = "abcdefghijklmnopqrstuvwxyz0123456789-";
constexpr std::string_view kPackageChars = "abcdefghijklmnopqrstuvwxyz0123456789+.-";
constexpr std::string_view kPpaChars = "abcdefghijklmnopqrstuvwxyz0123456789.+-";

// A key file's name: a word, no directory, ending in .gpg or .asc.
bool IsKeyFileName(const std::string& s) {
  constexpr std::string_view kChars =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-";
  return s.size() > 4 && s.size() < 200 && s[0] != '.' &&
         s.find_first_not_of(kChars) == std::string::npos &&
         (s.ends_with(".gpg") || s.ends_with(".asc"));
}

// One or more characters, all of `chars`.
bool IsManifestWord(std::string_view s, std::string_view chars) {
  return !s.empty() && s.find_first_not_of(chars) == std::string_view::npos;
}

// [a-z0-9][a-z0-9+.-]*(/[a-z0-9-]+)? (a package, or package/release).
bool IsDebianPackageName(std::string_view p) {
  const size_t slash = p.find('/');
  std::string_view name = p.substr(0, slash);
  if (!IsManifestWord(name, kPackageChars) || name[0] == '+' || name[0] == '.' || name[0] == '-')
    return false;
  return slash == std::string_view::npos || IsManifestWord(p.substr(slash + 1), kSuiteChars);
}

// [a-z0-9.+-]+/[a-z0-9.+-]+ (owner/name).
bool IsPpaName(std::string_view p) {
  const size_t slash = p.find('/');
  return slash != std::string_view::npos && IsManifestWord(p.substr(0, slash), kPpaChars) &&
         IsManifestWord(p.substr(slash + 1), kPpaChars);
}

}  // namespace

std::string AptSource::Render(const std::string& suite) const {
  const std::string options =
      signed_by.empty() ? "" : "[signed-by=/etc/apt/keyrings/" + signed_by + "] ";
  if (!line.empty()) return "deb " + options + line.substr(4);
  return "deb " + options + "http://ppa.launchpadcontent.net/" + ppa + "/ubuntu " + suite + " main";
}

std::string ImageManifest::Beside(const std::string& name) const {
  const size_t slash = file.rfind('/');
  return (slash == std::string::npos ? std::string(".") : file.substr(0, slash)) + "/" + name;
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
  if (top.GetString("distribution", m.distribution, true) && m.distribution != "debian" &&
      m.distribution != "ubuntu")
    errors.Add(top.Raw("distribution"),
               "distribution must be debian or ubuntu, found '" + m.distribution + "'");
  if (top.GetString("suite", m.suite, true) && !IsManifestWord(m.suite, kSuiteChars))
    errors.Add(top.Raw("suite"), "suite '" + m.suite + "' must be a release name like bookworm");
  if (top.GetString("mirror", m.mirror, true) && m.mirror.rfind("http://", 0) != 0 &&
      m.mirror.rfind("https://", 0) != 0 && m.mirror.rfind("file://", 0) != 0)
    errors.Add(top.Raw("mirror"), "mirror must be an http://, https:// or file:// URL");
  if (!top.GetStringList("components", m.components)) m.components = {"main"};
  if (top.GetString("architecture", m.architecture) && m.architecture != "amd64" &&
      m.architecture != "arm64")
    errors.Add(top.Raw("architecture"), "architecture must be amd64 or arm64");
  top.GetString("kernel_package", m.kernel_package, true);
  top.GetStringList("packages", m.packages);
  for (const auto& p : m.packages)
    if (!IsDebianPackageName(p))
      errors.Add(top.Raw("packages"), "'" + p + "' is not a Debian package name");
  if (!m.kernel_package.empty() && !IsDebianPackageName(m.kernel_package))
    errors.Add(top.Raw("kernel_package"),
               "'" + m.kernel_package + "' is not a Debian package name");
  top.GetMapList("apt_sources", [&](MapReader& a) {
    AptSource src;
    bool has_ppa = a.GetString("ppa", src.ppa), has_line = a.GetString("line", src.line);
    if (has_ppa == has_line)
      a.errors().Add(a.node(), "an apt source needs exactly one of 'ppa' or 'line'");
    if (has_ppa) {
      if (src.ppa.rfind("ppa:", 0) == 0) src.ppa = src.ppa.substr(4);
      if (!IsPpaName(src.ppa))
        a.errors().Add(a.Raw("ppa"), "ppa '" + src.ppa + "' must be owner/name");
      if (m.distribution == "debian")
        a.errors().Add(a.Raw("ppa"), "PPAs are for Ubuntu; this image is Debian");
    }
    if (has_line && src.line.rfind("deb ", 0) != 0)
      a.errors().Add(a.Raw("line"), "an apt source line starts with 'deb '");
    if (a.GetString("signed_by", src.signed_by)) {
      if (!IsKeyFileName(src.signed_by))
        a.errors().Add(a.Raw("signed_by"), "signed_by '" + src.signed_by + "' must be the name " +
                                               "of a .gpg or .asc file beside the manifest");
      if (has_line && src.line.find('[') != std::string::npos)
        a.errors().Add(a.Raw("signed_by"),
                       "the line has its own [options]: put signed-by there, or drop them");
    }
    m.apt_sources.push_back(std::move(src));
  });
  if (top.GetString("keyring", m.keyring) && !IsKeyFileName(m.keyring))
    errors.Add(top.Raw("keyring"), "keyring '" + m.keyring +
                                       "' must be the name of a .gpg or .asc file beside the "
                                       "manifest");
  top.GetStringList("initrd_modules", m.initrd_modules);
  for (const auto& mod : m.initrd_modules)
    if (!IsManifestWord(mod, "abcdefghijklmnopqrstuvwxyz0123456789_-"))
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
