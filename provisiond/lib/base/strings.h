// Small string helpers that several parts share.
#pragma once

#include <string>
#include <vector>

namespace prov {

// The parts with `sep` between them ("" for none).
std::string Join(const std::vector<std::string>& parts, const std::string& sep);

// ASCII lowercase (facts, vendor names and module names are ASCII).
std::string Lower(std::string s);

}  // namespace prov
