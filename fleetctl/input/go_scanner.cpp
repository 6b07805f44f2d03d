#include "fleetctl/input/go_scanner.hpp"

#include "common/encoding.hpp"
#include "fleetctl/input/go_text.hpp"

namespace etcdagent::fleet {

void GoScanner::skipSpace() {
  while (!atEnd()) {
    std::size_t w = 0;
    if (!isGoSpace(decodeRune(in_, pos_, &w))) return;
    pos_ += w;
  }
}

std::expected<void, ScanError> GoScanner::formatSpace() {
  if (atEnd()) return {};
  std::size_t w = 0;
  if (!isGoSpace(decodeRune(in_, pos_, &w))) {
    return std::unexpected(ScanError{"expected space in input to match format"});
  }
  skipSpace();
  return {};
}

std::expected<void, ScanError> GoScanner::literal(char c) {
  if (atEnd()) return std::unexpected(ScanError{"unexpected EOF"});
  if (in_[pos_] != c) return std::unexpected(ScanError{"input does not match format"});
  ++pos_;
  return {};
}

std::expected<std::string, ScanError> GoScanner::word() {
  skipSpace();
  if (atEnd()) return std::unexpected(ScanError{"unexpected EOF"});
  const std::size_t start = pos_;
  while (!atEnd()) {
    std::size_t w = 0;
    if (isGoSpace(decodeRune(in_, pos_, &w))) break;
    pos_ += w;
  }
  return std::string(in_.substr(start, pos_ - start));
}

std::expected<std::string, ScanError> GoScanner::quoted() {
  skipSpace();
  if (atEnd()) return std::unexpected(ScanError{"unexpected EOF"});
  const char quote = in_[pos_];
  if (quote != '"' && quote != '`') return std::unexpected(ScanError{"expected quoted string"});
  ++pos_;
  // fmt reads rune by rune: invalid UTF-8 becomes U+FFFD on the way.
  std::string buf(1, quote);
  for (bool escaped = false;;) {
    if (atEnd()) return std::unexpected(ScanError{"unexpected EOF"});
    std::size_t w = 0;
    const char32_t r = decodeRune(in_, pos_, &w);
    pos_ += w;
    appendUtf8(buf, r);
    if (quote == '`') {
      if (r == '`') return buf.substr(1, buf.size() - 2);
      continue;
    }
    if (escaped) {
      escaped = false;
    } else if (r == '\\') {
      escaped = true;
    } else if (r == '"') {
      break;
    }
  }
  auto text = goUnquote(buf);
  if (!text) return std::unexpected(ScanError{"invalid syntax"});
  return *text;
}

}  // namespace etcdagent::fleet
