#pragma once

// Small string helpers used across the code: the splitting and trimming of the comma-separated
// lists that flags and config values hold (--endpoints, --peer-urls, --hosts, [bootstrap] join:
// one splitter, whose rules each caller states), joining them again, and quoting a value for an
// error message.

#include <string>
#include <string_view>
#include <vector>

namespace etcdagent {

// Go's strings.TrimSpace for ASCII: spaces, tabs, newlines, \v, \f and \r at both ends.
std::string_view trimSpace(std::string_view s);

struct SplitRules {
  bool trim = false;        // trimSpace() every item
  bool skip_empty = false;  // leave out the items that are empty (after trimming)
};

// Splits at every ','. With the default rules this is Go's strings.Split(text, ","): "" gives one
// empty item and "a,,b" three. An empty `text` with skip_empty gives no item.
std::vector<std::string> splitComma(std::string_view text, SplitRules rules = {});

// The items with `separator` between them, as Go's strings.Join: {"a", "", "b"} joined by ","
// is "a,,b", and no item gives "". Any range of strings (a vector, a protobuf repeated field).
template <typename Strings>
std::string join(const Strings& items, std::string_view separator) {
  std::string out;
  bool first = true;
  for (const auto& item : items) {
    if (!first) out += separator;
    first = false;
    out += item;
  }
  return out;
}

// `value` quoted for a message, control characters as \xNN, cut after 64 characters: a 1 MB
// value from a config file or a request must not make a 1 MB message (printed on every start).
std::string quoteForMessage(std::string_view value);

}  // namespace etcdagent
