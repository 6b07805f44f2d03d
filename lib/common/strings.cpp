#include "common/strings.hpp"

namespace etcdagent {

std::string_view trimSpace(std::string_view s) {
  constexpr std::string_view kSpace = " \t\n\v\f\r";
  const auto begin = s.find_first_not_of(kSpace);
  if (begin == std::string_view::npos) return {};
  return s.substr(begin, s.find_last_not_of(kSpace) - begin + 1);
}

std::vector<std::string> splitComma(std::string_view text, SplitRules rules) {
  std::vector<std::string> out;
  for (;;) {
    const auto comma = text.find(',');
    std::string_view item = text.substr(0, comma);
    if (rules.trim) item = trimSpace(item);
    if (!item.empty() || !rules.skip_empty) out.emplace_back(item);
    if (comma == std::string_view::npos) return out;
    text.remove_prefix(comma + 1);
  }
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

}  // namespace etcdagent
