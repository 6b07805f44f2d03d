#include "agent/config/member_name.hpp"

#include <algorithm>
#include <array>

namespace etcdagent::agent {
namespace {

bool alnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

// <data_root>/discovery holds the coordinator's tokens, <data_root>/restore the uploads.
constexpr std::array<std::string_view, 2> kReserved = {"discovery", "restore"};

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

std::string quoteForMessage(std::string_view value) {
  constexpr std::size_t kShown = 64;
  std::string out = "\"";
  for (char c : value.substr(0, kShown)) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[u >> 4];
      out += kHex[u & 15];
    } else {
      out += c;
    }
  }
  out += "\"";
  if (value.size() > kShown) out += "... (" + std::to_string(value.size()) + " characters)";
  return out;
}

}  // namespace etcdagent::agent
