#pragma once

// Splitting and trimming of the comma-separated lists that flags and config values hold
// (--endpoints, --peer-urls, --hosts, [bootstrap] join): one splitter, whose rules each caller
// states, instead of one loop per caller with rules of its own.

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

}  // namespace etcdagent
