#include "fleetctl/commands/util.hpp"

#include "fleetctl/output/format.hpp"

namespace etcdagent::fleet {

std::string prefixRangeEnd(std::string_view prefix) {
  std::string end(prefix);
  for (std::size_t i = end.size(); i-- > 0;) {
    if (static_cast<unsigned char>(end[i]) < 0xff) {
      end[i] = static_cast<char>(static_cast<unsigned char>(end[i]) + 1);
      end.resize(i + 1);
      return end;
    }
  }
  return std::string(1, '\0');
}

std::unexpected<CommandError> unsupportedFormatError(Context& ctx) {
  return commandError(exitcode::kBadFeature, unsupportedFormat(ctx.global().format));
}

}  // namespace etcdagent::fleet
