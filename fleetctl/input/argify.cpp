#include "fleetctl/input/argify.hpp"

#include "fleetctl/input/go_scanner.hpp"

namespace etcdagent::fleet {
namespace {

// RE2's \s, which argify's regular expression uses: ASCII only, and no \v.
bool isReSpace(char c) {
  return c == '\t' || c == '\n' || c == '\f' || c == '\r' || c == ' ';
}

// The tokens of the regular expression "(?:[^"\\]|\\.)*"|'[^']*'|[^'"\s]\S*[^'"\s]?, quotes
// included, applied leftmost-first: at each position the first alternative that matches wins;
// where none does, the scan moves on by one byte (so an unterminated quote is skipped).
std::vector<std::string> tokens(std::string_view line) {
  std::vector<std::string> raw;
  const std::size_t n = line.size();
  for (std::size_t pos = 0; pos < n;) {
    const char c = line[pos];
    if (c == '"') {
      std::size_t j = pos + 1;
      bool closed = false;
      while (j < n) {
        if (line[j] == '\\') {
          if (j + 1 >= n) break;
          j += 2;
          continue;
        }
        if (line[j] == '"') {
          closed = true;
          break;
        }
        ++j;
      }
      if (closed) {
        raw.emplace_back(line.substr(pos, j + 1 - pos));
        pos = j + 1;
      } else {
        ++pos;
      }
      continue;
    }
    if (c == '\'') {
      const std::size_t close = line.find('\'', pos + 1);
      if (close != std::string_view::npos) {
        raw.emplace_back(line.substr(pos, close + 1 - pos));
        pos = close + 1;
      } else {
        ++pos;
      }
      continue;
    }
    if (isReSpace(c)) {
      ++pos;
      continue;
    }
    std::size_t j = pos + 1;
    while (j < n && !isReSpace(line[j])) ++j;
    raw.emplace_back(line.substr(pos, j - pos));
    pos = j;
  }
  return raw;
}

}  // namespace

InputResult<std::vector<std::string>> argify(std::string_view line) {
  std::vector<std::string> args;
  for (auto& token : tokens(line)) {
    if (token[0] == '\'') {
      args.push_back(token.substr(1, token.size() - 2));
    } else if (token[0] == '"') {
      GoScanner scan(token);
      auto text = scan.quoted();
      if (!text) {
        return std::unexpected(CommandError{exitcode::kInvalidInput, text.error().message});
      }
      args.push_back(std::move(*text));
    } else {
      args.push_back(std::move(token));
    }
  }
  return args;
}

}  // namespace etcdagent::fleet
