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

}  // namespace etcdagent
