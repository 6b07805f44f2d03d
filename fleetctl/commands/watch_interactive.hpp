#pragma once

// `watch --interactive`: what one line of stdin asks for, decided without the network. etcdctl
// knows two requests, `watch [options] key [range_end] [-- cmd ...]` (watch_args.hpp's rules,
// with the line's own options) and `progress`; anything else is a complaint on stderr after
// which reading goes on, and a few errors end the command (as etcdctl's ExitWithError does).

#include <string>
#include <string_view>
#include <vector>

#include "etcd/etcdserverpb/rpc.pb.h"
#include "fleetctl/cli/command.hpp"

namespace etcdagent::fleet {

struct WatchLineAction {
  enum class Kind {
    kWatch,      // create a watch: `create`, running `exec_args` per event (if any)
    kProgress,   // ask etcd for a progress notification
    kComplaint,  // print `complaint` on stderr and read the next line
    kFatal,      // end the command with `fatal`
  };
  Kind kind = Kind::kComplaint;
  etcdserverpb::WatchCreateRequest create;
  std::vector<std::string> exec_args;
  std::string complaint;
  CommandError fatal;
};

// One line (without its '\n'); `envKey`/`envRange` are ETCDCTL_WATCH_KEY/_RANGE_END.
WatchLineAction interpretWatchLine(std::string_view line, std::string_view envKey,
                                   std::string_view envRange);

}  // namespace etcdagent::fleet
