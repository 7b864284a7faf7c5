#include "playbook/runner_choice.h"

#include <algorithm>
#include <filesystem>
#include <set>
#include <sstream>

#include "base/file_util.h"
#include "base/process.h"
#include "base/temp_dir.h"

namespace prov {

namespace fs = std::filesystem;

const char* ToString(PlaybookRunner r) {
  switch (r) {
    case PlaybookRunner::kAuto:
      return "auto";
    case PlaybookRunner::kNative:
      return "native";
    case PlaybookRunner::kAnsible:
      return "ansible";
  }
  return "auto";
}

Result<PlaybookRunner> ParsePlaybookRunner(const std::string& text) {
  if (text == "auto" || text.empty()) return PlaybookRunner::kAuto;
  if (text == "native") return PlaybookRunner::kNative;
  if (text == "ansible") return PlaybookRunner::kAnsible;
  return Status::Invalid("runner '" + text + "' must be auto, native or ansible");
}

namespace {

// Ansible's message without its warnings: from the first "ERROR!" line on,
// or everything that is not a warning when there is none.
std::string AnsibleError(const std::string& output) {
  std::istringstream in(output);
  std::string line, all, error;
  bool in_error = false, in_warning = false;
  while (std::getline(in, line)) {
    if (line.rfind("ERROR!", 0) == 0) in_error = true;
    if (in_error) {
      error += line + "\n";
      continue;
    }
    // A warning runs on over its indented continuation lines.
    if (line.rfind("[WARNING]", 0) == 0 || line.rfind("[DEPRECATION WARNING]", 0) == 0) {
      in_warning = true;
      continue;
    }
    if (in_warning && !line.empty() && line[0] == ' ') continue;
    in_warning = false;
    if (!line.empty()) all += line + "\n";
  }
  std::string out = error.empty() ? all : error;
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

std::string FirstLine(const std::string& text) {
  return text.substr(0, text.find('\n'));
}

}  // namespace

Status AnsibleSyntaxCheck(const std::string& path, const AnsibleTool& tool) {
  std::error_code ec;
  if (!fs::exists(tool.program, ec))
    return Status::Error(Code::kUnavailable,
                         tool.program +
                             " is not installed (apt-get install ansible): playbooks outside "
                             "the native runner's subset need it");
  TempDir tmp("provisiond-ansible-check");
  // An empty config of our own: no ansible.cfg of the current folder or of
  // the user changes what is accepted.
  Status cfg = WriteFileAtomic(tmp.path() + "/ansible.cfg", "[defaults]\n", 0600);
  if (!cfg.ok()) return cfg;
  std::string roles = fs::path(path).parent_path().string() + "/roles";
  if (!tool.roles_path.empty()) roles += ":" + tool.roles_path;
  ProcessSpec spec;
  spec.argv = {tool.program, "--syntax-check", "-i", "localhost,", path};
  spec.env = {"ANSIBLE_CONFIG=" + tmp.path() + "/ansible.cfg",
              "ANSIBLE_LOCAL_TEMP=" + tmp.path(),
              "ANSIBLE_ROLES_PATH=" + roles,
              "ANSIBLE_NOCOLOR=1",
              "ANSIBLE_RETRY_FILES_ENABLED=0",
              "ANSIBLE_DEPRECATION_WARNINGS=0",
              "ANSIBLE_LOCALHOST_WARNING=0"};
  auto r = RunProcess(spec, 120000);
  if (!r.ok()) return r.status();
  if (r->exit_code == 0) return Status::Ok();
  std::string error = AnsibleError(r->output);
  if (r->timed_out) error = "ansible-playbook --syntax-check did not finish in 120 s";
  return Status::Invalid(path + ": ansible-playbook --syntax-check refuses it:\n" + error);
}

Result<RunnerChoice> ChoosePlaybookRunner(FileSet& files, const std::string& path,
                                          PlaybookRunner wanted, const std::string& roles_path) {
  std::string error;
  if (!files.Text(path, &error))
    return Status::NotFound("playbook " + path + " cannot be read: " + error);
  RunnerChoice choice;
  choice.forced = wanted != PlaybookRunner::kAuto;
  if (wanted == PlaybookRunner::kAnsible) {
    choice.runner = PlaybookRunner::kAnsible;
    choice.reason = "forced by runner: ansible";
    return choice;
  }
  auto native = ParsePlaybook(files, path, roles_path);
  if (!native.ok()) {
    if (wanted == PlaybookRunner::kNative) return native.status();
    choice.runner = PlaybookRunner::kAnsible;
    choice.reason = "outside the native subset: " + FirstLine(native.status().message());
    return choice;
  }
  choice.runner = PlaybookRunner::kNative;
  choice.reason = wanted == PlaybookRunner::kNative ? "forced by runner: native" : "loads natively";
  choice.native = std::make_shared<const Playbook>(std::move(*native));
  return choice;
}

Result<RunnerChoice> ReadAndChoosePlaybookRunner(const std::string& path, PlaybookRunner wanted,
                                                 const std::string& roles_path) {
  FileSet files;
  return ReadThenParse(
      files, [&](FileSet& f) { return ChoosePlaybookRunner(f, path, wanted, roles_path); });
}

Status CheckWithAnsible(const std::string& path, RunnerChoice& choice, const AnsibleTool& tool) {
  if (choice.runner != PlaybookRunner::kAnsible) return Status::Ok();
  std::error_code ec;
  if (choice.forced && !fs::exists(tool.program, ec)) {
    choice.reason += " (not checked: " + tool.program +
                     " is not installed; apt-get install ansible before it runs)";
    return Status::Ok();
  }
  Status check = AnsibleSyntaxCheck(path, tool);
  if (check.ok() || choice.forced) return check;
  // Both refusals: the native loader's points at file:line, Ansible's is
  // the authority on what Ansible accepts.
  return Status::Error(
      check.code(), "native runner: " + choice.reason.substr(choice.reason.find(": ") + 2) + "\n" +
                        check.message());
}

std::vector<std::string> AnsibleReachedFiles(FileSet& files, const std::string& path) {
  static const std::set<std::string> kBeside = {
      "roles", "tasks",      "handlers",  "vars",    "defaults",     "templates",
      "files", "group_vars", "host_vars", "library", "module_utils", "filter_plugins"};
  std::vector<std::string> out;
  fs::path dir = fs::path(path).parent_path();
  if (dir.empty()) dir = ".";
  for (const auto& file : files.Tree(dir.string())) {
    fs::path rel = fs::path(file).lexically_relative(fs::path(dir).lexically_normal());
    if (rel.empty()) continue;
    bool hidden = false;
    size_t parts = 0;
    for (const auto& part : rel) {
      ++parts;
      if (!part.empty() && part.string()[0] == '.' && part != "." && part != "..") hidden = true;
    }
    if (hidden || *rel.begin() == "..") continue;
    if (parts == 1 || kBeside.count(rel.begin()->string())) out.push_back(file);
  }
  return out;  // Tree is sorted
}

}  // namespace prov
