#include "common/encoding.hpp"

#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>

namespace etcdagent {
namespace {

constexpr std::string_view kB64 =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
constexpr std::string_view kHex = "0123456789abcdef";

int hexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Length of the valid UTF-8 sequence starting at s[i], or 0 if it is not valid.
std::size_t utf8Length(std::string_view s, std::size_t i, std::uint32_t* cp) {
  auto b0 = static_cast<unsigned char>(s[i]);
  std::size_t n = 0;
  std::uint32_t c = 0;
  if (b0 < 0x80) {
    *cp = b0;
    return 1;
  }
  if ((b0 & 0xE0) == 0xC0) {
    n = 2;
    c = b0 & 0x1F;
  } else if ((b0 & 0xF0) == 0xE0) {
    n = 3;
    c = b0 & 0x0F;
  } else if ((b0 & 0xF8) == 0xF0) {
    n = 4;
    c = b0 & 0x07;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (std::size_t k = 1; k < n; ++k) {
    auto b = static_cast<unsigned char>(s[i + k]);
    if ((b & 0xC0) != 0x80) return 0;
    c = (c << 6) | (b & 0x3F);
  }
  // reject overlong forms, surrogates and out of range
  if ((n == 2 && c < 0x80) || (n == 3 && c < 0x800) || (n == 4 && c < 0x10000) || c > 0x10FFFF ||
      (c >= 0xD800 && c <= 0xDFFF)) {
    return 0;
  }
  *cp = c;
  return n;
}

// net/url's shouldEscape(c, encodeHost) is false: what a host may hold unescaped.
bool allowedInHost(char c) {
  static constexpr std::string_view kAllowed = "!$&'()*+,;=:[]<>\"-_.~";
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         kAllowed.find(c) != std::string_view::npos;
}

// net/url's unescape(s, mode). `lenient` keeps a malformed escape as it is instead of failing.
Result<std::string> unescape(std::string_view s, UrlPart part, bool lenient) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    const char c = s[i];
    if (c == '%') {
      // Go checks i+2 >= len(s): an escape needs both its digits.
      const bool wellFormed =
          i + 2 < s.size() && hexValue(s[i + 1]) >= 0 && hexValue(s[i + 2]) >= 0;
      if (!wellFormed) {
        if (lenient) {
          out += c;
          ++i;
          continue;
        }
        return fail(
            Errc::kInvalidArgument,
            "invalid URL escape " + goQuote(s.substr(i, std::min<std::size_t>(3, s.size() - i))));
      }
      const int value = hexValue(s[i + 1]) << 4 | hexValue(s[i + 2]);
      // In a host only non-ASCII bytes (UTF-8) may be escaped, and '%' itself.
      if (!lenient && part == UrlPart::kHost && value < 0x80 && s.substr(i, 3) != "%25") {
        return fail(Errc::kInvalidArgument, "invalid URL escape " + goQuote(s.substr(i, 3)));
      }
      out += static_cast<char>(value);
      i += 3;
      continue;
    }
    if (!lenient && part == UrlPart::kHost && static_cast<unsigned char>(c) < 0x80 &&
        !allowedInHost(c)) {
      return fail(Errc::kInvalidArgument,
                  "invalid character " + goQuote(std::string(1, c)) + " in host name");
    }
    out += c == '+' && part == UrlPart::kQuery ? ' ' : c;
    ++i;
  }
  return out;
}

}  // namespace

void appendUtf8(std::string& out, char32_t r) {
  if (r < 0x80) {
    out += static_cast<char>(r);
  } else if (r < 0x800) {
    out += static_cast<char>(0xC0 | (r >> 6));
    out += static_cast<char>(0x80 | (r & 0x3F));
  } else if (r < 0x10000) {
    out += static_cast<char>(0xE0 | (r >> 12));
    out += static_cast<char>(0x80 | ((r >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (r & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (r >> 18));
    out += static_cast<char>(0x80 | ((r >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((r >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (r & 0x3F));
  }
}

std::string base64Encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    std::uint32_t v = (static_cast<unsigned char>(bytes[i]) << 16) |
                      (static_cast<unsigned char>(bytes[i + 1]) << 8) |
                      static_cast<unsigned char>(bytes[i + 2]);
    out += kB64[(v >> 18) & 63];
    out += kB64[(v >> 12) & 63];
    out += kB64[(v >> 6) & 63];
    out += kB64[v & 63];
  }
  std::size_t rest = bytes.size() - i;
  if (rest > 0) {
    std::uint32_t v = static_cast<unsigned char>(bytes[i]) << 16;
    if (rest == 2) v |= static_cast<unsigned char>(bytes[i + 1]) << 8;
    out += kB64[(v >> 18) & 63];
    out += kB64[(v >> 12) & 63];
    out += rest == 2 ? kB64[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

Result<std::string> base64Decode(std::string_view text) {
  std::array<int, 256> table{};
  table.fill(-1);
  for (std::size_t i = 0; i < kB64.size(); ++i)
    table[static_cast<unsigned char>(kB64[i])] = static_cast<int>(i);
  std::string out;
  std::uint32_t acc = 0;
  int bits = 0;
  std::size_t pad = 0;
  for (char c : text) {
    if (c == '=') {
      ++pad;
      continue;
    }
    int v = table[static_cast<unsigned char>(c)];
    if (v < 0 || pad > 0) return fail(Errc::kInvalidArgument, "invalid base64 input");
    acc = (acc << 6) | static_cast<std::uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xFF);
    }
  }
  if (pad > 2) return fail(Errc::kInvalidArgument, "invalid base64 input");
  return out;
}

std::string hexEncode(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) {
    auto b = static_cast<unsigned char>(c);
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }
  return out;
}

std::string hexEscape(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 4);
  for (char c : bytes) {
    auto b = static_cast<unsigned char>(c);
    out += "\\x";
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }
  return out;
}

Result<std::string> hexDecode(std::string_view text) {
  std::string digits;
  digits.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\\' && i + 1 < text.size() && text[i + 1] == 'x') {
      ++i;
      continue;
    }
    digits += text[i];
  }
  if (digits.size() % 2 != 0) return fail(Errc::kInvalidArgument, "odd length hex string");
  std::string out;
  for (std::size_t i = 0; i < digits.size(); i += 2) {
    int hi = hexValue(digits[i]);
    int lo = hexValue(digits[i + 1]);
    if (hi < 0 || lo < 0)
      return fail(Errc::kInvalidArgument, "invalid hex string \"" + std::string(text) + "\"");
    out += static_cast<char>(hi * 16 + lo);
  }
  return out;
}

std::string goQuote(std::string_view s) {
  std::string out = "\"";
  for (std::size_t i = 0; i < s.size();) {
    std::uint32_t cp = 0;
    std::size_t n = utf8Length(s, i, &cp);
    if (n == 0) {
      out += "\\x";
      auto b = static_cast<unsigned char>(s[i]);
      out += kHex[b >> 4];
      out += kHex[b & 15];
      ++i;
      continue;
    }
    if (n == 1) {
      char c = s[i];
      switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\a': out += "\\a"; break;
        case '\b': out += "\\b"; break;
        case '\f': out += "\\f"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        case '\v': out += "\\v"; break;
        default:
          if (cp < 0x20 || cp == 0x7F) {
            out += "\\x";
            out += kHex[cp >> 4];
            out += kHex[cp & 15];
          } else {
            out += c;
          }
      }
    } else {
      out.append(s.substr(i, n));
    }
    i += n;
  }
  out += '"';
  return out;
}

std::string goSignalName(int sig) {
  static constexpr std::array<const char*, 32> kNames = {nullptr,
                                                         "hangup",
                                                         "interrupt",
                                                         "quit",
                                                         "illegal instruction",
                                                         "trace/breakpoint trap",
                                                         "aborted",
                                                         "bus error",
                                                         "floating point exception",
                                                         "killed",
                                                         "user defined signal 1",
                                                         "segmentation fault",
                                                         "user defined signal 2",
                                                         "broken pipe",
                                                         "alarm clock",
                                                         "terminated",
                                                         "stack fault",
                                                         "child exited",
                                                         "continued",
                                                         "stopped (signal)",
                                                         "stopped",
                                                         "stopped (tty input)",
                                                         "stopped (tty output)",
                                                         "urgent I/O condition",
                                                         "CPU time limit exceeded",
                                                         "file size limit exceeded",
                                                         "virtual timer expired",
                                                         "profiling timer expired",
                                                         "window changed",
                                                         "I/O possible",
                                                         "power failure",
                                                         "bad system call"};
  if (sig > 0 && sig < static_cast<int>(kNames.size()))
    return kNames[static_cast<std::size_t>(sig)];
  return "signal " + std::to_string(sig);
}

std::string jsonQuote(std::string_view s) {
  std::string out = "\"";
  for (std::size_t i = 0; i < s.size();) {
    std::uint32_t cp = 0;
    std::size_t n = utf8Length(s, i, &cp);
    if (n == 0) {
      out += "\\ufffd";  // Go's encoding/json replaces invalid UTF-8
      ++i;
      continue;
    }
    if (n == 1) {
      char c = s[i];
      switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        case '<': out += "\\u003c"; break;
        case '>': out += "\\u003e"; break;
        case '&': out += "\\u0026"; break;
        default:
          if (cp < 0x20) {
            out += "\\u00";
            out += kHex[cp >> 4];
            out += kHex[cp & 15];
          } else {
            out += c;
          }
      }
    } else if (cp == 0x2028 || cp == 0x2029) {
      out += cp == 0x2028 ? "\\u2028" : "\\u2029";
    } else {
      out.append(s.substr(i, n));
    }
    i += n;
  }
  out += '"';
  return out;
}

std::string goErrnoText(int err) {
  std::string text = std::strerror(err);
  if (!text.empty() && text[0] >= 'A' && text[0] <= 'Z') text[0] = static_cast<char>(text[0] + 32);
  return text;
}

Result<std::string> urlUnescape(std::string_view text, UrlPart part) {
  return unescape(text, part, false);
}

std::string urlUnescapeLenient(std::string_view text, UrlPart part) {
  return *unescape(text, part, true);  // lenient: it cannot fail
}

std::string leaseIdHex(std::int64_t id) {
  // Go pads to the width with zeros after the sign: the sign takes one of the 16 columns.
  const bool negative = id < 0;
  const std::uint64_t magnitude =
      negative ? ~static_cast<std::uint64_t>(id) + 1 : static_cast<std::uint64_t>(id);
  char digits[17];
  std::snprintf(digits, sizeof digits, "%llx", static_cast<unsigned long long>(magnitude));
  std::string body(digits);
  const std::size_t width = negative ? 15 : 16;
  if (body.size() < width) body.insert(0, width - body.size(), '0');
  return negative ? "-" + body : body;
}

std::string hexId(std::uint64_t id) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%llx", static_cast<unsigned long long>(id));
  return buf;
}

std::string humanizeBytes(std::uint64_t bytes) {
  if (bytes < 10) return std::to_string(bytes) + " B";
  static const char* const kSizes[] = {"B", "kB", "MB", "GB", "TB", "PB", "EB"};
  // The same float arithmetic as go-humanize (logn, floor, pow), so values round identically.
  const double s = static_cast<double>(bytes);
  const double e = std::floor(std::log(s) / std::log(1000.0));
  const double val = std::floor(s / std::pow(1000.0, e) * 10 + 0.5) / 10;
  char buf[64];
  std::snprintf(buf, sizeof buf, val < 10 ? "%.1f %s" : "%.0f %s", val,
                kSizes[static_cast<int>(e)]);
  return buf;
}

}  // namespace etcdagent
