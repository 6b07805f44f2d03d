#pragma once

// What toml++ must not be given, and how to give back what it read instead.
//
// Debian's toml++ 3.3 has undefined behaviour when it asks whether some non-ASCII characters are
// whitespace: is_non_ascii_horizontal_whitespace in its generated unicode tables reaches
// __builtin_unreachable() for U+00A1..U+0499, U+2C5E..U+3057 (but U+3000) and U+FB26..U+FEFE,
// and its parser asks that of characters in many places (a value's token, a line-ending
// backslash in a multi-line string, ...). These characters are common in strings and comments
// (accented letters, Greek, Cyrillic), so they cannot be refused.
//
// The screen does not try to know where toml++ asks: it parses a copy of the text in which every
// such character (a "hazard") is replaced by one stand-in, a character toml++ classifies without
// harm and that the text contains nowhere, neither literally nor as a \u escape. A syntax error
// is then exactly the original's (TOML treats all these characters alike: none is whitespace, a
// key character or a delimiter) at the same line and column (columns count code points), and the
// parsed keys and strings get their characters back: the n-th stand-in in a key or string is the
// n-th hazard from where that key or string begins in the text.
//
// Before that, a control character (anything below U+0020 but tab, LF and CR, and U+007F) anywhere
// is refused: TOML forbids them everywhere, and toml++ went on past NUL bytes.

#include <toml++/toml.h>

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.hpp"

namespace etcdagent {

class TomlScreen {
 public:
  // Refuses control characters, as "source:line:col: ...".
  static Result<TomlScreen> of(std::string_view text, std::string_view source);

  // The text to give toml++: the original, or its copy with the stand-in for every hazard.
  [[nodiscard]] std::string_view text() const { return hazards_.empty() ? original_ : copy_; }

  // Gives the parsed keys and strings their hazards back. A key that then appears twice in one
  // table (`"é" = 1` beside `"\u00e9" = 2`) is the error toml++ would have reported.
  Result<void> restore(toml::table& root) const;

  // toml++'s description of an error at line:column, the stand-in in it named as the hazard there
  // (or the nearest one before it).
  [[nodiscard]] std::string restoreMessage(std::string_view description, std::size_t line,
                                           std::size_t column) const;

  struct Hazard {
    std::size_t line = 0;
    std::size_t column = 0;
    char32_t value = 0;
  };

 private:
  TomlScreen(std::string_view original, std::string_view source)
      : original_(original), source_(source) {}

  Result<void> restoreTable(toml::table& table) const;
  Result<void> restoreNode(toml::node& node) const;
  Result<std::string> restored(std::string_view value, const toml::source_position& begin) const;

  std::string_view original_;
  std::string source_;
  std::string copy_;
  std::string stand_in_;         // UTF-8
  std::vector<Hazard> hazards_;  // in document order
};

// Whether toml++ 3.3's is_non_ascii_horizontal_whitespace(c) has no defined answer.
bool isTomlHazard(char32_t c);

}  // namespace etcdagent
