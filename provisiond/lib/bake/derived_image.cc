#include "bake/derived_image.h"

#include <chrono>
#include <filesystem>
#include <map>
#include <thread>

#include "base/file_util.h"
#include "base/strings.h"
#include "configure/ansible_runner.h"
#include "configure/play_runner.h"
#include "images/finish.h"
#include "playbook/remote.h"

namespace prov {
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

// Raised when what the image stage does to a tree changes (a derived image
// built by an older provisiond is then built again).
constexpr int kBakeRecipe = 1;

json InputsOf(const Profile& p, const std::string& base_ref) {
  std::map<std::string, std::string> sha;
  for (const auto& f : p.files) sha[f.path] = f.sha256;
  json bake = json::array();
  for (const auto& ref : p.bake) {
    json files = json::object();
    for (const auto& path : ref.files) files[path] = sha.count(path) ? sha[path] : "";
    bake.push_back({{"playbook", ref.file},
                    {"vars", ref.vars},
                    {"runner", ToString(ref.runs_on)},
                    {"files", files}});
  }
  return {{"recipe", kBakeRecipe}, {"base", base_ref}, {"bake", bake}};
}

// Task results as progress lines: "bake slurm.yml: MUNGE: changed (3.1 s)".
class ProgressSink : public RunSink {
 public:
  ProgressSink(const BuildProgress& progress, std::string playbook)
      : progress_(progress), playbook_(std::move(playbook)) {}
  void OnTask(const std::string&, const TaskResult& r) override {
    if (!progress_) return;
    char took[32];
    snprintf(took, sizeof took, "%.1f s", static_cast<double>(r.duration_ms) / 1000.0);
    std::string line =
        "bake " + playbook_ + ": " + r.task + ": " + ToString(r.status) + " (" + took + ")";
    if (r.status == TaskStatus::kFailed && !r.msg.empty()) line += ": " + r.msg.substr(0, 300);
    progress_(line);
  }

 private:
  const BuildProgress& progress_;
  std::string playbook_;
};

}  // namespace

std::vector<std::string> DiffDerivedInputs(const json& from, const json& to) {
  std::vector<std::string> out;
  if (from.value("recipe", 0) != to.value("recipe", 0))
    out.push_back("the image stage's recipe changed (a newer provisiond)");
  if (from.value("base", "") != to.value("base", ""))
    out.push_back("base " + from.value("base", "?") + " -> " + to.value("base", "?"));
  std::map<std::string, json> old_pb, new_pb;
  std::map<std::string, std::string> old_files, new_files;
  auto read = [](const json& inputs, std::map<std::string, json>& playbooks,
                 std::map<std::string, std::string>& files) {
    const json bake = inputs.value("bake", json::array());
    for (const auto& pb : bake) {
      playbooks[pb.value("playbook", "")] = pb;
      const json reached = pb.value("files", json::object());
      for (auto it = reached.begin(); it != reached.end(); ++it)
        files[it.key()] = it->is_string() ? it->get<std::string>() : "";
    }
  };
  read(from, old_pb, old_files);
  read(to, new_pb, new_files);
  for (const auto& [name, pb] : new_pb) {
    auto it = old_pb.find(name);
    if (it == old_pb.end()) {
      out.push_back("bake playbook " + name + " added");
      continue;
    }
    if (it->second.value("vars", json::object()) != pb.value("vars", json::object()))
      out.push_back("vars of bake playbook " + name + " changed");
    if (it->second.value("runner", "") != pb.value("runner", ""))
      out.push_back("runner of bake playbook " + name + " changed");
  }
  for (const auto& [name, pb] : old_pb)
    if (!new_pb.count(name)) out.push_back("bake playbook " + name + " removed");
  for (const auto& [path, sha] : new_files) {
    auto it = old_files.find(path);
    if (it == old_files.end()) {
      if (!new_pb.count(path.substr(std::string("playbooks/").size())))
        out.push_back(path + " added");
    } else if (it->second != sha) {
      out.push_back(path + " changed");
    }
  }
  for (const auto& [path, sha] : old_files)
    if (!new_files.count(path) && !old_pb.count(path.substr(std::string("playbooks/").size())))
      out.push_back(path + " removed");
  // Same playbooks, files and vars, but another order.
  if (out.empty() && from != to) out.push_back("the order of the bake playbooks changed");
  return out;
}

Result<DerivedImage> PlanDerivedImage(const Profile& p, ImageCatalog& catalog) {
  if (p.bake.empty())
    return Status::Invalid("profile " + p.version + " bakes nothing: its nodes boot " +
                           p.image_name);
  const std::string base_spec =
      p.image_version.empty() ? p.image_name : p.image_name + "@" + p.image_version;
  auto base = catalog.Resolve(base_spec);
  if (!base.ok())
    return Status::NotFound("the base image " + base_spec + " of profile " + p.version +
                            " is not built (provisionctl image build " + p.image_name +
                            "): " + base.status().message());
  DerivedImage d;
  d.name = p.image_name + std::string(kDerivedImageSuffix);
  d.base = base->ref();
  d.inputs = InputsOf(p, d.base);
  d.version = Sha256Hex(d.inputs.dump()).substr(0, 16);
  auto built = catalog.Resolve(d.ref());
  d.built = built.ok();
  if (d.built) return d;
  // Against the one built last for this profile (several profiles bake on
  // one base: each has its versions of <image>.baked), else the last one.
  json old;
  std::string old_ref;
  int64_t newest = -1;
  for (const auto& v : catalog.List()) {
    if (v.name != d.name) continue;
    auto meta = ReadFile(v.dir + "/image.json");
    json j = meta.ok() ? json::parse(*meta, nullptr, false) : json();
    if (j.is_discarded() || !j.is_object() || !j.contains("derived")) continue;
    const bool same_profile = j["derived"].value("profile", "") == p.version;
    const int64_t rank = (same_profile ? (int64_t{1} << 62) : 0) + v.created_ms;
    if (rank > newest) {
      newest = rank;
      old = j["derived"];
      old_ref = v.ref();
    }
  }
  if (old_ref.empty()) {
    d.changes.push_back("no derived image of " + p.image_name + " yet");
    return d;
  }
  d.changes = DiffDerivedInputs(old.value("inputs", json::object()), d.inputs);
  // Another profile's bake list differs in everything: say whose it is.
  if (old.value("profile", "") != p.version) {
    const size_t n = d.changes.size();
    d.changes = {"no derived image of " + p.image_name + " for profile " + p.version +
                 " yet (the last one, " + old_ref + ", is profile " +
                 old.value("profile", std::string("?")) + "'s: " + std::to_string(n) +
                 " difference(s))"};
  }
  if (d.changes.empty()) d.changes.push_back("no record of " + d.ref());
  return d;
}

Result<ImageVersion> BuildDerivedImage(const Profile& p, ImageCatalog& catalog,
                                       const ImageBuildOptions& opt, const AnsibleTool& tool,
                                       const BuildProgress& progress) {
  const auto started = std::chrono::steady_clock::now();
  auto say = [&](const std::string& line) {
    if (progress) progress(line);
  };
  auto plan = PlanDerivedImage(p, catalog);
  if (!plan.ok()) return plan.status();
  if (plan->built) {
    say("image reused: " + plan->ref() + " is built already");
    return catalog.Resolve(plan->ref());
  }
  for (const auto& ref : p.bake)
    if (!ref.parsed && ref.runs_on != PlaybookRunner::kAnsible)
      return Status::Invalid("bake playbook " + ref.file + " (" + p.file + ":" +
                             std::to_string(ref.line) + ") is not loaded");
  Status s = CheckFinishingInputs(opt);
  if (!s.ok()) return s;
  auto base = catalog.Resolve(plan->base);
  if (!base.ok()) return base.status();
  if (base->root.empty() || !fs::is_directory(base->root))
    return Status::NotFound("the base image " + base->ref() +
                            " has no root tree to bake into (built by an older provisiond?)");
  say("image rebuilt: " + Join(plan->changes, "; "));
  auto build = BuildDir::Create(catalog, plan->name);
  if (!build.ok()) return build.status();
  const std::string root = build->root();

  say("copying the root tree of " + base->ref());
  ProcessSpec copy;
  copy.argv = {"/bin/cp", "-a", "--reflink=auto", base->root + "/.", root};
  s = RunBuildStep(copy, opt.timeout_s, progress, "copy", opt.cancel);
  if (!s.ok()) return s;
  s = BeginImageStage(root);
  if (!s.ok()) return s;

  ChrootRemote remote(plan->name, root);
  const json vars = {{"inventory_hostname", plan->name},
                     {"inventory_hostname_short", plan->name},
                     {"groups", {{"all", json::array()}, {"ungrouped", json::array()}}},
                     {"hostvars", json::object()},
                     {"provisiond_facts", json::object()},
                     {"ansible_facts", json::object()},
                     {"provisiond_profile", p.version},
                     {"provisiond_image", base->ref()},
                     {"ansible_connection", "chroot"}};
  RunOptions run;
  run.cancel = opt.cancel;
  run.sleep = [&](int ms) {
    for (int waited = 0; waited < ms; waited += 100) {
      if (opt.cancel && *opt.cancel) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(std::min(100, ms - waited)));
    }
    return !(opt.cancel && *opt.cancel);
  };
  for (const auto& ref : p.bake) {
    say("bake " + ref.file + ": running in the image's root tree");
    run.extra_vars = ref.vars.is_object() ? ref.vars : json::object();
    // The stage is the runner's to say: a profile's vars cannot change it.
    run.extra_vars["provisiond_stage"] = "image";
    ProgressSink sink(progress, ref.file);
    NodeRunOutcome out;
    if (ref.runs_on == PlaybookRunner::kAnsible) {
      // Debian's ansible-playbook with its chroot connection, in the same
      // mounts as the native runner's tasks (playbook/remote.h).
      AnsibleRunSettings ansible;
      ansible.tool = tool;
      ansible.work_dir = build->path() + "/ansible";
      ansible.image_root = root;
      ansible.timeout_s = opt.timeout_s;
      AnsibleHost host;
      host.name = plan->name;
      host.chroot = root;
      host.vars = vars;
      host.sink = &sink;
      auto outs = RunAnsiblePlaybook(ref.path, {host}, run.extra_vars, {}, ansible, opt.cancel);
      out = outs[plan->name];
    } else {
      out = RunPlaybook(*ref.parsed, plan->name, remote, vars, &sink, run);
    }
    if (opt.cancel && *opt.cancel) return Status::Internal("the build was cancelled");
    if (out.status != RunStatus::kOk)
      return Status::Internal("bake playbook " + ref.file + " (" + p.file + ":" +
                              std::to_string(ref.line) +
                              ") failed at image stage: " + out.failed_task);
    say("bake " + ref.file + ": " + std::to_string(out.ok) + " ok, " + std::to_string(out.changed) +
        " changed, " + std::to_string(out.skipped) + " skipped");
  }
  EndImageStage(root);

  ImageManifest m;
  m.name = plan->name;
  m.kernel_package = "the kernel of " + base->ref();
  m.sha256 = plan->version;
  // The base's initrd modules (its manifest's), and its initrd as it is when
  // the bake left the kernel, modules and firmware alone.
  auto base_meta = ReadFile(base->dir + "/image.json");
  json base_json = base_meta.ok() ? json::parse(*base_meta, nullptr, false) : json();
  if (base_json.is_object() && base_json.contains("initrd_modules") &&
      base_json["initrd_modules"].is_array())
    for (const auto& mod : base_json["initrd_modules"])
      if (mod.is_string()) m.initrd_modules.push_back(mod.get<std::string>());
  ImageBuildOptions finish = opt;
  finish.initrd_from = base->dir;
  const json provenance = {{"source", "bake"},
                           {"derived",
                            {{"base", base->ref()},
                             {"profile", p.version},
                             {"profile_sha256", p.sha256},
                             {"inputs", plan->inputs}}}};
  return FinishImage(*build, m, provenance, catalog, finish, progress, started, plan->version);
}

}  // namespace prov
