#include "fleetctl/input/go_text.hpp"

#include <limits>

#include "common/encoding.hpp"

namespace etcdagent::fleet {
namespace {

int hexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

char32_t decodeRune(std::string_view s, std::size_t i, std::size_t* width) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  auto cont = [&](std::size_t k) {
    return i + k < s.size() && (static_cast<unsigned char>(s[i + k]) & 0xC0) == 0x80;
  };
  auto at = [&](std::size_t k) { return static_cast<char32_t>(s[i + k] & 0x3F); };
  *width = 1;
  if (b0 < 0x80) return b0;
  if (b0 >= 0xC2 && b0 <= 0xDF && cont(1)) {
    *width = 2;
    return (static_cast<char32_t>(b0 & 0x1F) << 6) | at(1);
  }
  if (b0 >= 0xE0 && b0 <= 0xEF && cont(1) && cont(2)) {
    char32_t r = (static_cast<char32_t>(b0 & 0x0F) << 12) | (at(1) << 6) | at(2);
    if (r >= 0x800 && (r < 0xD800 || r > 0xDFFF)) {
      *width = 3;
      return r;
    }
    return 0xFFFD;
  }
  if (b0 >= 0xF0 && b0 <= 0xF4 && cont(1) && cont(2) && cont(3)) {
    char32_t r = (static_cast<char32_t>(b0 & 0x07) << 18) | (at(1) << 12) | (at(2) << 6) | at(3);
    if (r >= 0x10000 && r <= 0x10FFFF) {
      *width = 4;
      return r;
    }
  }
  return 0xFFFD;
}

bool isGoSpace(char32_t r) {
  return (r >= 0x09 && r <= 0x0D) || r == 0x20 || r == 0x85 || r == 0xA0 || r == 0x1680 ||
         (r >= 0x2000 && r <= 0x200A) || r == 0x2028 || r == 0x2029 || r == 0x202F || r == 0x205F ||
         r == 0x3000;
}

std::string_view goTrimSpace(std::string_view s) {
  std::size_t start = 0;
  while (start < s.size()) {
    std::size_t w = 0;
    if (!isGoSpace(decodeRune(s, start, &w))) break;
    start += w;
  }
  s.remove_prefix(start);
  // Trailing: find the last non-space rune by decoding forward.
  std::size_t end = 0;
  for (std::size_t i = 0; i < s.size();) {
    std::size_t w = 0;
    const bool space = isGoSpace(decodeRune(s, i, &w));
    i += w;
    if (!space) end = i;
  }
  return s.substr(0, end);
}

std::optional<std::string> goUnquote(std::string_view lit) {
  if (lit.size() < 2 || lit.front() != '"' || lit.back() != '"') return std::nullopt;
  std::string_view body = lit.substr(1, lit.size() - 2);
  std::string out;
  for (std::size_t i = 0; i < body.size();) {
    const char c = body[i];
    if (c == '\n' || c == '"') return std::nullopt;
    if (c != '\\') {
      out += c;
      ++i;
      continue;
    }
    if (++i >= body.size()) return std::nullopt;
    const char e = body[i++];
    switch (e) {
      case 'a': out += '\a'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'n': out += '\n'; break;
      case 'r': out += '\r'; break;
      case 't': out += '\t'; break;
      case 'v': out += '\v'; break;
      case '\\': out += '\\'; break;
      case '"': out += '"'; break;
      case 'x':
      case 'u':
      case 'U': {
        const std::size_t n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
        if (i + n > body.size()) return std::nullopt;
        std::uint32_t v = 0;
        for (std::size_t k = 0; k < n; ++k) {
          int d = hexDigit(body[i + k]);
          if (d < 0) return std::nullopt;
          v = v * 16 + static_cast<std::uint32_t>(d);
        }
        i += n;
        if (e == 'x') {
          out += static_cast<char>(v);
        } else {
          if (v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) return std::nullopt;
          appendUtf8(out, v);
        }
        break;
      }
      default: {
        if (e < '0' || e > '7' || i + 2 > body.size()) return std::nullopt;
        std::uint32_t v = static_cast<std::uint32_t>(e - '0');
        for (std::size_t k = 0; k < 2; ++k) {
          const char d = body[i + k];
          if (d < '0' || d > '7') return std::nullopt;
          v = v * 8 + static_cast<std::uint32_t>(d - '0');
        }
        if (v > 255) return std::nullopt;
        i += 2;
        out += static_cast<char>(v);
      }
    }
  }
  return out;
}

std::expected<std::int64_t, std::string> goParseInt(std::string_view text, int base) {
  const std::string prefix = "strconv.ParseInt: parsing " + goQuote(text) + ": ";
  std::string_view s = text;
  bool negative = false;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  if (s.empty()) return std::unexpected(prefix + "invalid syntax");
  std::uint64_t value = 0;
  bool overflow = false;
  for (char c : s) {
    int d = hexDigit(c);
    if (d < 0 || d >= base) return std::unexpected(prefix + "invalid syntax");
    if (value > (std::numeric_limits<std::uint64_t>::max() - static_cast<std::uint64_t>(d)) /
                    static_cast<std::uint64_t>(base)) {
      overflow = true;
    } else {
      value = value * static_cast<std::uint64_t>(base) + static_cast<std::uint64_t>(d);
    }
  }
  const std::uint64_t limit =
      negative ? std::uint64_t{1} << 63 : (std::uint64_t{1} << 63) - 1;  // |INT64_MIN|, INT64_MAX
  if (overflow || value > limit) return std::unexpected(prefix + "value out of range");
  if (negative) return static_cast<std::int64_t>(~value + 1);
  return static_cast<std::int64_t>(value);
}

}  // namespace etcdagent::fleet
