#pragma once

// Output formats, as etcdctl's -w/--write-out names them.

#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>

#include "common/encoding.hpp"  // humanizeBytes, for the printers
#include "common/error.hpp"

namespace etcdagent::fleet {

enum class OutputFormat { kSimple, kJson, kTable, kFields };

Result<OutputFormat> parseOutputFormat(std::string_view name);

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
