#pragma once

// Byte-string encodings used by etcdctl's output: base64 (JSON), hex (--hex), Go-quoted strings,
// Go's texts of signals, errnos and IDs, and the percent-decoding of URLs.

#include <cstdint>
#include <string>
#include <string_view>

#include "common/error.hpp"

namespace etcdagent {

// Appends the code point `c` (at most U+10FFFF) as UTF-8.
void appendUtf8(std::string& out, char32_t c);

std::string base64Encode(std::string_view bytes);
Result<std::string> base64Decode(std::string_view text);

// Lower-case hex of every byte, no separators ("foo" -> "666f6f").
std::string hexEncode(std::string_view bytes);
// etcdctl --hex prints "\x66\x6f\x6f".
std::string hexEscape(std::string_view bytes);
// Decodes "\x66\x6f\x6f" style (as etcdctl's txn reader accepts) or plain hex "666f6f".
Result<std::string> hexDecode(std::string_view text);

// Go's strconv.Quote: "a\"b\n" -> "\"a\\\"b\\n\"" (printable UTF-8 kept, rest escaped).
std::string goQuote(std::string_view s);
// Go's name of a Linux signal (syscall.Signal.String(): 9 -> "killed"), "signal N" if unknown.
std::string goSignalName(int sig);

// Go's text of an errno (syscall.Errno.Error()): strerror's, starting in lower case ("no such
// file or directory"), as etcdctl's messages quote it.
std::string goErrnoText(int err);

// A member or cluster ID as etcdctl prints it: lower-case hex without padding (%x).
std::string hexId(std::uint64_t id);
// A lease ID as etcdctl prints it: Go's "%016x" of an int64 (a negative ID keeps its sign and
// gives a column to it: "-000000000000001").
std::string leaseIdHex(std::int64_t id);

// The part of a URL a percent-encoded text is, as Go's net/url tells them apart.
enum class UrlPart {
  kPath,   // url.PathUnescape: '+' stays a plus
  kHost,   // a URL's host: also refuses what a host cannot hold, and %XX below 0x80 but %25
  kQuery,  // url.QueryUnescape (query and form values): '+' is a space
};
// Go's net/url unescape, with its errors: `invalid URL escape "%zz"`,
// `invalid character " " in host name`.
Result<std::string> urlUnescape(std::string_view text, UrlPart part);
// The same decoding for a server, which takes what a client sent rather than refusing it: a
// malformed escape is kept as it was sent ("100%" stays "100%"), and nothing is refused.
std::string urlUnescapeLenient(std::string_view text, UrlPart part);

// JSON string literal (RFC 8259) with Go encoding/json's escaping of <, >, & and U+2028/9.
std::string jsonQuote(std::string_view s);

// Go's humanize.Bytes, as etcdctl prints sizes: SI units (base 1000), "%.1f" below 10 and "%.0f"
// above: 20480 -> "20 kB", 2123456 -> "2.1 MB".
std::string humanizeBytes(std::uint64_t bytes);

}  // namespace etcdagent
