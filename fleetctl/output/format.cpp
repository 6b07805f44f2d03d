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

std::string Output::bytes(std::string_view b) const {
  return hex ? hexEscape(b) : std::string(b);
}

}  // namespace etcdagent::fleet
