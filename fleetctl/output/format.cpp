#include "fleetctl/output/format.hpp"

#include <cmath>
#include <cstdio>

#include "common/encoding.hpp"

namespace etcdagent::fleet {

Result<OutputFormat> parseOutputFormat(std::string_view name) {
  if (name == "simple") return OutputFormat::kSimple;
  if (name == "json") return OutputFormat::kJson;
  if (name == "table") return OutputFormat::kTable;
  if (name == "fields") return OutputFormat::kFields;
  return fail(Errc::kInvalidArgument, "unknown output format \"" + std::string(name) +
                                          "\" (use simple, json, table or fields)");
}

std::string_view formatName(OutputFormat f) {
  switch (f) {
    case OutputFormat::kSimple: return "simple";
    case OutputFormat::kJson: return "json";
    case OutputFormat::kTable: return "table";
    case OutputFormat::kFields: return "fields";
  }
  return "simple";
}

std::string unsupportedFormat(OutputFormat f) {
  return std::string(formatName(f)) + " not supported as output format";
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

std::string Output::bytes(std::string_view b) const {
  return hex ? hexEscape(b) : std::string(b);
}

}  // namespace etcdagent::fleet
