// A directory that exists as long as its owner: made with mkdtemp(3) under
// $TMPDIR (or /tmp), removed with everything in it when the owner goes.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <stdexcept>
#include <string>

namespace prov {

class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "provisiond") {
    const char* tmp = getenv("TMPDIR");
    std::string templ = std::string(tmp && *tmp ? tmp : "/tmp") + "/" + prefix + ".XXXXXX";
    if (!mkdtemp(templ.data())) throw std::runtime_error("mkdtemp " + templ + " failed");
    path_ = templ;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace prov
