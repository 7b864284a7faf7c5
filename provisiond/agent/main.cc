// provision-facts: the node's agent, one static program so it runs in any
// image.
//   provision-facts [ROOT]             this machine's facts as JSON (the
//                                      phone-home body)
//   provision-facts storage SPEC OUT   sets up the profile's local storage
//                                      (storage.h) as SPEC says, writes the
//                                      outcome to OUT (write, then rename)
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>

#include "facts.h"
#include "storage.h"

namespace {

int Storage(const std::string& spec_path, const std::string& out_path) {
  std::ifstream in(spec_path);
  nlohmann::json spec = nlohmann::json::parse(in, nullptr, false);
  nlohmann::json outcome;
  if (!in || spec.is_discarded())
    outcome = {{"state", "failed"}, {"reason", spec_path + " cannot be read as JSON"}};
  else
    outcome = prov::agent::SetUpStorage(spec, {"/", prov::agent::SystemRunner()});
  const std::string tmp = out_path + ".tmp";
  {
    std::ofstream out(tmp);
    out << outcome.dump(2) << "\n";
    if (!out) {
      std::cerr << "provision-facts storage: cannot write " << tmp << "\n";
      return 1;
    }
  }
  if (std::rename(tmp.c_str(), out_path.c_str()) != 0) {
    std::cerr << "provision-facts storage: cannot rename " << tmp << "\n";
    return 1;
  }
  std::cout << "provision-facts storage: " << outcome.value("state", "?")
            << (outcome.contains("reason") ? ": " + outcome["reason"].get<std::string>() : "")
            << "\n";
  return 0;  // a failed volume is the node's state to report, not the unit's
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "storage") {
    if (argc != 4) {
      std::cerr << "usage: provision-facts storage SPEC OUT\n";
      return 2;
    }
    return Storage(argv[2], argv[3]);
  }
  std::string root = argc > 1 ? argv[1] : "";
  std::cout << prov::agent::CollectFacts(root).dump() << "\n";
  return 0;
}
