#pragma once

// The fleet's own forms of `member add` and `member remove`, which drive etcd-agents:
//   member add --host H[:PORT] [--name NAME]  join the agent on H as a learner, then promote it,
//                                             and record it in the fleet inventory;
//   member remove NAME|ID [--force]           refuse a removal that breaks quorum, remove, then
//                                             stop and wipe the member on its agent.
//   member stop NAME [--force]                stop a member's etcd on its agent (refused when
//                                             the cluster would lose quorum);
//   member start NAME [--health-timeout D]    start it again and wait until it is healthy.
// `member remove HEXID` keeps etcdctl's output on stdout and its exit codes; the fleet's notes
// then go to stderr.

#include "fleetctl/cli/command.hpp"

namespace etcdagent::fleet {

CommandResult runMemberAddHost(Context& ctx);
CommandResult runMemberRemove(Context& ctx);
CommandResult runMemberStop(Context& ctx);
CommandResult runMemberStart(Context& ctx);

}  // namespace etcdagent::fleet
