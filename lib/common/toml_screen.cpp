#include "common/toml_screen.hpp"

#include <cstddef>
#include <cstdio>
#include <optional>
#include <string>

namespace etcdagent {
namespace {

struct CodePoint {
  char32_t value = 0;
  std::size_t length = 0;  // 0: not valid UTF-8
};

CodePoint decodeAt(std::string_view s, std::size_t i) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  if (b0 < 0x80) return {b0, 1};
  std::size_t n = 0;
  char32_t value = 0;
  char32_t least = 0;
  if ((b0 & 0xE0U) == 0xC0U) {
    n = 2, value = b0 & 0x1FU, least = 0x80;
  } else if ((b0 & 0xF0U) == 0xE0U) {
    n = 3, value = b0 & 0x0FU, least = 0x800;
  } else if ((b0 & 0xF8U) == 0xF0U) {
    n = 4, value = b0 & 0x07U, least = 0x10000;
  } else {
    return {};
  }
  if (n > s.size() - i) return {};
  for (std::size_t k = 1; k < n; ++k) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    if ((b & 0xC0U) != 0x80U) return {};
    value = (value << 6U) | (b & 0x3FU);
  }
  if (value < least || value > 0x10FFFF || (value >= 0xD800 && value <= 0xDFFF)) return {};
  return {value, n};
}

std::string codePointName(char32_t c) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "U+%04X", static_cast<unsigned>(c));
  return buf;
}

std::string escapeFor(char32_t c) {
  char buf[16];
  if (c <= 0xFFFF) {
    std::snprintf(buf, sizeof buf, "\\u%04X", static_cast<unsigned>(c));
  } else {
    std::snprintf(buf, sizeof buf, "\\U%08X", static_cast<unsigned>(c));
  }
  return buf;
}

// A lexer that knows only what tells strings and comments apart. Where the text is not valid
// TOML, toml++ stops with an error at or before the place where this lexer may lose its way.
class Screen {
 public:
  Screen(std::string_view text, std::string_view source) : text_(text), source_(source) {}

  Result<void> run() {
    // toml++ skips a byte order mark at the very start; columns count from after it.
    if (text_.starts_with("\xEF\xBB\xBF")) pos_ = 3;
    // toml++ reads a value such as 1x"... to its end (whitespace, ']', '}', ',' or '#') and
    // asks of every character whether it is whitespace: a quote starts a string only where a
    // key or a value begins.
    // Which '=' and '.' may precede a string: the first '=' of a line (the key's), and a '.'
    // before it (a dotted key). A later one is inside a value, which toml++ reads as one token:
    // in `k = 1.0='x'` no string starts (found by the fuzzer).
    char before = '\n';
    int equals = 0;  // the '=' of this line up to and including `before` (outside strings)
    while (!done()) {
      const char c = text_[pos_];
      const bool starts = std::string_view(" \t\r\n[{,").find(before) != std::string_view::npos ||
                          (before == '=' && equals == 1) || (before == '.' && equals == 0);
      before = c;
      if (c == '\n') equals = 0;
      if (c == '=') ++equals;
      if (c == '#') {
        comment();
      } else if (c == '"' && starts) {
        at(R"(""")") ? multiLineBasic() : basic();
      } else if (c == '\'' && starts) {
        at("'''") ? multiLineLiteral() : literal();
      } else if (nonAscii()) {
        const CodePoint cp = decodeAt(text_, pos_);
        refuse(codePointName(cp.value) +
               " outside a string or comment: TOML allows only ASCII in keys and between values "
               "(quote the key or the value)");
      } else {
        step();
      }
    }
    if (error_) return fail(Errc::kInvalidArgument, *error_);
    return {};
  }

 private:
  [[nodiscard]] bool done() const { return pos_ >= text_.size() || error_ || stopped_; }
  [[nodiscard]] bool at(std::string_view s) const { return text_.substr(pos_).starts_with(s); }
  [[nodiscard]] char current() const { return text_[pos_]; }
  static bool isBlank(char c) { return c == ' ' || c == '\t'; }

  // True at a valid non-ASCII character; at invalid UTF-8 the screen stops (toml++ reports it).
  bool nonAscii() {
    if (static_cast<unsigned char>(text_[pos_]) < 0x80) return false;
    if (decodeAt(text_, pos_).length == 0) {
      stopped_ = true;
      return false;
    }
    return true;
  }

  void step() {
    const CodePoint cp = decodeAt(text_, pos_);
    if (cp.length == 0) {
      stopped_ = true;
      return;
    }
    pos_ += cp.length;
    if (cp.value == U'\n') {
      ++line_;
      column_ = 1;
    } else {
      ++column_;
    }
  }

  void steps(int n) {
    for (int i = 0; i < n && !done(); ++i) step();
  }

  void refuse(const std::string& what) {
    error_ = std::string(source_) + ":" + std::to_string(line_) + ":" + std::to_string(column_) +
             ": " + what;
  }

  void refuseInMultiLineString(std::string_view where) {
    const CodePoint cp = decodeAt(text_, pos_);
    refuse(codePointName(cp.value) + " " + std::string(where) +
           " in a multi-line string: the TOML reader cannot take it there; write it as " +
           escapeFor(cp.value));
  }

  void comment() {
    while (!done() && current() != '\n') step();
  }

  // "...": the newline that ends an unterminated one is toml++'s error.
  void basic() {
    step();
    while (!done()) {
      const char c = current();
      if (c == '\\') {
        step();
        if (!done() && static_cast<unsigned char>(current()) < 0x80) step();
      } else if (c == '"') {
        step();
        return;
      } else if (c == '\n') {
        return;
      } else {
        step();
      }
    }
  }

  void literal() {
    step();
    while (!done()) {
      const char c = current();
      if (c == '\'') {
        step();
        return;
      }
      if (c == '\n') return;
      step();
    }
  }

  // The closing delimiter may be followed by up to two quotes that belong to the content.
  void closeMultiLine(char quote) {
    steps(3);
    for (int i = 0; i < 2 && !done() && current() == quote; ++i) step();
  }

  void multiLineLiteral() {
    steps(3);
    while (!done()) {
      if (at("'''")) return closeMultiLine('\'');
      step();
    }
  }

  void multiLineBasic() {
    steps(3);
    while (!done()) {
      if (at(R"(""")")) return closeMultiLine('"');
      if (current() != '\\') {
        step();
        continue;
      }
      step();
      if (done()) return;
      if (nonAscii()) return refuseInMultiLineString("right after a backslash");
      const char c = current();
      if (isBlank(c) || c == '\r' || c == '\n') {
        lineEndingBackslash();
      } else {
        step();
      }
    }
  }

  // After "\": blanks, then the line break, then blank lines and indentation, all trimmed.
  void lineEndingBackslash() {
    while (!done() && isBlank(current())) step();
    if (done()) return;
    if (nonAscii()) return refuseInMultiLineString("after a line-ending backslash on its line");
    while (!done() && (isBlank(current()) || current() == '\r' || current() == '\n')) step();
    if (done()) return;
    if (nonAscii()) return refuseInMultiLineString("first after a line-ending backslash");
  }

  std::string_view text_;
  std::string_view source_;
  std::size_t pos_ = 0;
  std::size_t line_ = 1;
  std::size_t column_ = 1;
  std::optional<std::string> error_;
  bool stopped_ = false;
};

}  // namespace

// TOML allows no control character but tab, line feed and carriage return anywhere, in strings
// and comments too. toml++ does not always stop at one (after NUL bytes it went on to ask its
// unicode tables about a later character): refuse the first, before anything else.
Result<void> screenControls(std::string_view text, std::string_view source) {
  std::size_t line = 1;
  std::size_t column = 1;
  std::size_t i = text.starts_with("\xEF\xBB\xBF") ? 3 : 0;
  for (; i < text.size(); ++i) {
    const auto b = static_cast<unsigned char>(text[i]);
    if (b == '\n') {
      ++line;
      column = 1;
      continue;
    }
    if ((b < 0x20 && b != '\t' && b != '\r') || b == 0x7F) {
      return fail(Errc::kInvalidArgument,
                  std::string(source) + ":" + std::to_string(line) + ":" + std::to_string(column) +
                      ": control character " + codePointName(b) +
                      ": TOML allows none but tab, also in strings and comments (in a string, "
                      "write it as " +
                      escapeFor(b) + ")");
    }
    if ((b & 0xC0U) != 0x80U) ++column;  // columns count code points, as toml++'s do
  }
  return {};
}

Result<void> screenToml(std::string_view text, std::string_view source) {
  if (auto controls = screenControls(text, source); !controls) return controls;
  return Screen(text, source).run();
}

}  // namespace etcdagent
