#include "agent/config/member_name.hpp"

#include <algorithm>
#include <array>

#include "common/strings.hpp"

namespace etcdagent::agent {
namespace {

bool alnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

// <data_root>/discovery holds the coordinator's tokens, <data_root>/restore the uploads,
// <data_root>/pki the agents' keys, <data_root>/snapshots the scheduled snapshots (by default) and
// <data_root>/drill the restore drills' throwaway members.
constexpr std::array<std::string_view, 5> kReserved = {"discovery", "restore", "pki", "snapshots",
                                                       "drill"};

}  // namespace

std::optional<std::string> memberNameProblem(std::string_view name) {
  const std::string rule =
      "expected 1 to 63 letters, digits, '.', '_' or '-', starting with a letter or digit";
  if (name.empty()) return rule + ", got an empty name";
  if (name.size() > kMaxMemberNameLength) {
    return rule + ", got " + std::to_string(name.size()) + " characters";
  }
  if (!alnum(name.front())) return rule + ", got " + quoteForMessage(name);
  if (!std::all_of(name.begin(), name.end(),
                   [](char c) { return alnum(c) || c == '.' || c == '_' || c == '-'; })) {
    return rule + ", got " + quoteForMessage(name);
  }
  if (std::find(kReserved.begin(), kReserved.end(), name) != kReserved.end()) {
    return "\"" + std::string(name) + "\" is reserved: etcd-agent keeps <data_root>/" +
           std::string(name) + " for itself";
  }
  return std::nullopt;
}

}  // namespace etcdagent::agent
