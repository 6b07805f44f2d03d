#pragma once

// Go's reading of text, as etcdctl's input parsers see it: UTF-8 runes (invalid bytes are
// U+FFFD), unicode.IsSpace, strings.TrimSpace, strconv.Unquote of a "double-quoted" literal and
// strconv.ParseInt. Pure; the building blocks of the fmt scanner (go_scanner.hpp) and of argify.

#include <cstddef>
#include <cstdint>
#include <expected>
#include <optional>
#include <string>
#include <string_view>

namespace etcdagent::fleet {

// Decodes the rune at s[i] and sets *width to its length in bytes; invalid bytes decode as U+FFFD
// of width 1 (as Go's decoders do).
char32_t decodeRune(std::string_view s, std::size_t i, std::size_t* width);

// unicode.IsSpace (and fmt's scanner, which uses the same set).
bool isGoSpace(char32_t r);

// Go's strings.TrimSpace (Unicode white space).
std::string_view goTrimSpace(std::string_view s);

// strconv.Unquote of a double-quoted literal (quotes included): Go's escapes (\n, \x61, \u00e9,
// \101, ...); nullopt where Go fails with "invalid syntax".
std::optional<std::string> goUnquote(std::string_view literal);

// Go's strconv.ParseInt(text, base, 64) for base 10 or 16, with Go's error text
// ("strconv.ParseInt: parsing \"x\": invalid syntax" / "... value out of range").
std::expected<std::int64_t, std::string> goParseInt(std::string_view text, int base);

}  // namespace etcdagent::fleet
