// Precompiled header of the library and its tests: the heavy headers that
// most units include anyway (nlohmann's JSON alone is ~25k lines). It only
// speeds up the build: every unit still includes what it uses.
#pragma once

#include <spdlog/spdlog.h>
#include <yaml-cpp/yaml.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>
