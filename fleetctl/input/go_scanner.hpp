#pragma once

// Go's fmt scanner, as far as etcdctl's input needs it: the verbs of fmt.Sscanf(line,
// "%q) %s %q") that read a txn compare, and "%q" alone, which argify uses to unquote a
// "double-quoted" argument. Pure; errors carry fmt's texts, which etcdctl prints as they are.

#include <cstddef>
#include <expected>
#include <string>
#include <string_view>

namespace etcdagent::fleet {

// A scan error. `message` is fmt's error text ("unexpected EOF", "invalid syntax", ...).
struct ScanError {
  std::string message;
};

// Scans one line from the start, one format element at a time; a failed step leaves the
// position where fmt would stop.
class GoScanner {
 public:
  explicit GoScanner(std::string_view in) : in_(in) {}

  [[nodiscard]] bool atEnd() const { return pos_ >= in_.size(); }

  // ss.SkipSpace (input lines never hold a newline here).
  void skipSpace();

  // A space in the format: at least one input space (or the end), then any more.
  std::expected<void, ScanError> formatSpace();

  // A literal character of the format.
  std::expected<void, ScanError> literal(char c);

  // %s: the next space-delimited word.
  std::expected<std::string, ScanError> word();

  // %q: a "double-quoted" (Go escapes) or `back-quoted` string, unquoted.
  std::expected<std::string, ScanError> quoted();

 private:
  std::string_view in_;
  std::size_t pos_ = 0;
};

}  // namespace etcdagent::fleet
