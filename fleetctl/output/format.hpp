#pragma once

// Output formats, as etcdctl's -w/--write-out names them.

#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>

#include "common/error.hpp"

namespace etcdagent::fleet {

enum class OutputFormat { kSimple, kJson, kTable, kFields };

Result<OutputFormat> parseOutputFormat(std::string_view name);

// Go's humanize.Bytes, as etcdctl prints sizes: SI units (base 1000), "%.1f" below 10 and "%.0f"
// above: 20480 -> "20 kB", 2123456 -> "2.1 MB".
std::string humanizeBytes(std::uint64_t bytes);
std::string_view formatName(OutputFormat f);
// "table not supported as output format" and friends, as etcdctl words it.
std::string unsupportedFormat(OutputFormat f);

// Where a command prints, and how.
struct Output {
  std::ostream& out;
  std::ostream& err;
  OutputFormat format = OutputFormat::kSimple;
  bool hex = false;  // --hex: byte strings as \x.. escapes (simple) / hex (fields)

  // A key or value in simple output: raw bytes, or \x.. escapes with --hex.
  [[nodiscard]] std::string bytes(std::string_view b) const;
};

}  // namespace etcdagent::fleet
