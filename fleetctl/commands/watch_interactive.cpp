#include "fleetctl/commands/watch_interactive.hpp"

#include "fleetctl/commands/watch_args.hpp"
#include "fleetctl/input/argify.hpp"

namespace etcdagent::fleet {
namespace {

using Kind = WatchLineAction::Kind;

WatchLineAction complaint(std::string text) {
  return {.kind = Kind::kComplaint, .complaint = std::move(text)};
}

WatchLineAction fatal(CommandError error) {
  return {.kind = Kind::kFatal, .fatal = std::move(error)};
}

}  // namespace

WatchLineAction interpretWatchLine(std::string_view line, std::string_view envKey,
                                   std::string_view envRange) {
  const std::string text(line);
  auto args = argify(line);
  if (!args) return fatal(args.error());
  if (args->empty())
    return complaint("Invalid command: " + text + " (watch and progress supported)");
  if ((*args)[0] == "progress") return {.kind = Kind::kProgress};
  if ((*args)[0] != "watch") return complaint("Invalid command " + text + " (only support watch)");
  if (args->size() < 2 && envKey.empty()) {
    return complaint("Invalid command " + text + " (command type or key is not provided)");
  }
  auto parsed = parseInteractiveWatch(*args, envKey, envRange);
  if (!parsed) return fatal(CommandError{exitcode::kBadArgs, parsed.error()});
  auto create = watchCreateRequest(parsed->watch_args, parsed->options);
  if (!create) return complaint("Invalid command " + text + " (" + create.error() + ")");
  return {.kind = Kind::kWatch, .create = std::move(*create), .exec_args = parsed->exec_args};
}

}  // namespace etcdagent::fleet
