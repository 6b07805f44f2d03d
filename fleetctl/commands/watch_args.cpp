#include "fleetctl/commands/watch_args.hpp"

#include <algorithm>

#include "fleetctl/commands/util.hpp"

namespace etcdagent::fleet {
namespace {

using Args = std::vector<std::string>;

std::ptrdiff_t indexOf(const Args& args, std::string_view what) {
  auto it = std::find(args.begin(), args.end(), what);
  return it == args.end() ? -1 : it - args.begin();
}

// "watch foo bar --rev 1 -- echo hello" leaves "foo bar echo hello" after flag parsing: drop
// the exec command, found from the end by its first word (etcdctl's way).
Args dropExecArgs(const Args& watchArgs, const std::string& firstExecArg) {
  auto end = static_cast<std::ptrdiff_t>(watchArgs.size()) - 1;
  for (; end >= 0; --end) {
    if (watchArgs[static_cast<std::size_t>(end)] == firstExecArg) break;
  }
  return Args(watchArgs.begin(), watchArgs.begin() + std::max<std::ptrdiff_t>(end, 0));
}

Args withEnvironmentKey(Args watchArgs, std::string_view envKey, std::string_view envRange) {
  if (envKey.empty()) return watchArgs;
  Args ranges{std::string(envKey)};
  if (!envRange.empty()) ranges.emplace_back(envRange);
  ranges.insert(ranges.end(), watchArgs.begin(), watchArgs.end());
  return ranges;
}

}  // namespace

void defineWatchFlags(FlagSet& f) {
  f.boolean("interactive", 'i', false, "Interactive mode")
      .boolean("prefix", 0, false, "Watch on a prefix if prefix is set")
      .integer("rev", 0, 0, "Revision to start watching")
      .boolean("prev-kv", 0, false, "get the previous key-value pair before the event happens");
}

std::expected<WatchArgs, std::string> parseWatchCommandLine(const Args& argv, const Args& args,
                                                            std::string_view envKey,
                                                            std::string_view envRange) {
  // The raw arguments after the command name.
  Args raw = argv;
  if (auto at = indexOf(raw, "watch"); at >= 0) raw.erase(raw.begin(), raw.begin() + at + 1);

  const std::ptrdiff_t execIdx = indexOf(raw, "--");
  const bool execExist = execIdx >= 0;
  if (execExist && execIdx == static_cast<std::ptrdiff_t>(raw.size()) - 1) {
    return std::unexpected(std::string(kErrBadArgsNumSeparator));
  }
  if (!execExist && raw.empty() && envKey.empty()) {
    return std::unexpected(std::string(kErrBadArgsNum));
  }
  if (execExist && !envKey.empty()) {
    // "ETCDCTL_WATCH_KEY=foo watch foo -- echo 1": a key before "--" conflicts with the
    // environment. Walk both lists from the end; an argument that is not where the raw list
    // has it, while the raw list is at "--", came before the separator.
    auto ridx = static_cast<std::ptrdiff_t>(raw.size()) - 1;
    for (auto widx = static_cast<std::ptrdiff_t>(args.size()) - 1; widx >= 0 && ridx >= 0; --widx) {
      if (args[static_cast<std::size_t>(widx)] == raw[static_cast<std::size_t>(ridx)]) {
        --ridx;
        continue;
      }
      if (ridx == execIdx) return std::unexpected(std::string(kErrBadArgsNumConflictEnv));
    }
  }
  if (!execExist && !args.empty() && !envKey.empty()) {
    return std::unexpected(std::string(kErrBadArgsNumConflictEnv));
  }

  WatchArgs out;
  out.watch_args = withEnvironmentKey(args, envKey, envRange);
  if (!execExist) return out;
  out.exec_args.assign(raw.begin() + execIdx + 1, raw.end());
  out.watch_args = dropExecArgs(out.watch_args, out.exec_args.front());
  return out;
}

std::expected<WatchArgs, std::string> parseInteractiveWatch(const Args& lineArgs,
                                                            std::string_view envKey,
                                                            std::string_view envRange) {
  if (lineArgs.empty() || lineArgs[0] != "watch") {
    return std::unexpected(std::string("args[0] must be 'watch' for interactive calls"));
  }
  const Args words(lineArgs.begin() + 1, lineArgs.end());
  const std::ptrdiff_t execIdx = indexOf(words, "--");
  const bool execExist = execIdx >= 0;
  if (execExist && execIdx == static_cast<std::ptrdiff_t>(words.size()) - 1) {
    return std::unexpected(std::string(kErrBadArgsNumSeparator));
  }

  FlagSet flags;
  defineWatchFlags(flags);
  auto positional = parseArgs(words, {&flags});
  if (!positional) return std::unexpected(positional.error().message);
  if (!execExist && envKey.empty() && positional->empty()) {
    return std::unexpected(std::string(kErrBadArgsNum));
  }
  if (!execExist && !positional->empty() && !envKey.empty()) {
    return std::unexpected(std::string(kErrBadArgsNumConflictEnv));
  }

  WatchArgs out;
  out.options = {.prefix = flags.getBool("prefix"),
                 .rev = flags.getInt("rev"),
                 .prev_kv = flags.getBool("prev-kv")};
  out.watch_args = withEnvironmentKey(*positional, envKey, envRange);
  if (!execExist) return out;
  out.exec_args.assign(words.begin() + execIdx + 1, words.end());
  out.watch_args = dropExecArgs(out.watch_args, out.exec_args.front());
  return out;
}

std::expected<etcdserverpb::WatchCreateRequest, std::string> watchCreateRequest(
    const Args& watchArgs, const WatchOptions& options) {
  if (watchArgs.empty()) return std::unexpected(std::string(kErrBadArgsNum));
  etcdserverpb::WatchCreateRequest req;
  std::string key = watchArgs[0];
  if (watchArgs.size() == 2) {
    if (options.prefix) {
      return std::unexpected(std::string("`range_end` and `--prefix` are mutually exclusive"));
    }
    req.set_range_end(watchArgs[1]);
  }
  if (options.prefix) {
    // clientv3.WithPrefix: an empty prefix watches every key.
    if (key.empty()) {
      key = std::string(1, '\0');
      req.set_range_end(std::string(1, '\0'));
    } else {
      req.set_range_end(prefixRangeEnd(key));
    }
  }
  req.set_key(key);
  req.set_start_revision(options.rev);
  req.set_prev_kv(options.prev_kv);
  return req;
}

}  // namespace etcdagent::fleet
