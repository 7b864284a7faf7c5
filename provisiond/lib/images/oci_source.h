// The oci image source: a node image from a container image. The manifest
// names it (`oci:`) as skopeo does: an image in a registry
// (docker://REPO:TAG or docker://REPO@sha256:...), an archive as `docker
// save` or `podman save` write it (docker-archive:FILE), an OCI layout
// archive (oci-archive:FILE) or folder (oci:DIR[:TAG]); a relative FILE or
// DIR is beside the manifest. skopeo copies it into an OCI layout in the
// build's folder and umoci unpacks that (each layer's digest verified,
// whiteouts applied, owners, modes, xattrs and file capabilities kept). A
// container image lacks what a node boots with (a kernel, systemd, sshd):
// `kernel_package` and `packages` are installed on top with the tree's own
// apt, in the image stage's private mounts (playbook/remote.h), and what is
// still missing is one error before any node is pointed at the image.
// The version is named by what made it (the image's manifest digest, this
// manifest, the finishing's inputs): importing the same image again builds
// nothing.
#pragma once

#include <string>
#include <vector>

#include "base/yaml_reader.h"
#include "images/image_manifest.h"

namespace prov {

struct OciSettings : SourceSettings {
  std::string reference;  // as the manifest writes it
  // A secret's name (secrets store) whose value is the registry's
  // "user:password" (or "user:token"); docker:// only.
  std::string credentials;
  std::vector<std::string> packages;  // installed on top, with kernel_package
  std::string Summary() const override {
    return reference +
           (packages.empty() ? "" : ", " + std::to_string(packages.size()) + " packages on top");
  }
};

// Reads the source's keys (oci, credentials, kernel_package, packages) into
// `manifest`, errors at their lines.
void ParseOciManifest(MapReader& top, ImageManifest& manifest);

// The settings of a manifest whose source is oci.
const OciSettings& OciSettingsOf(const ImageManifest& manifest);

// The reference as skopeo reads it: a relative path made absolute beside
// the manifest.
std::string OciSkopeoReference(const ImageManifest& manifest);

// The registry a docker:// reference names (its first part when that has a
// '.' or a ':' or is localhost), else Docker Hub's "docker.io".
std::string OciRegistryOf(const std::string& reference);

// skopeo's login file (its --authfile) for `reference`'s registry with
// `credentials` ("user:password").
std::string OciAuthJson(const std::string& reference, const std::string& credentials);

// What a netbooted node needs that the tree at `root` lacks, in words, each
// with the package that brings it: a kernel in /boot, systemd as /sbin/init,
// sshd, and curl (the phone-home agent's). Paths are resolved inside the
// tree (its absolute links too). `kernel_package` is named in the kernel's
// line when the manifest has one.
std::vector<std::string> MissingForNode(const std::string& root, const std::string& kernel_package);

}  // namespace prov
