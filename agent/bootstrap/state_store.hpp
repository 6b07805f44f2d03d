#pragma once

// <data_root>/<member>/state.json: the accepted plan. Written atomically (write .part, fsync,
// rename, fsync dir) so an agent restart or a reboot finds either the old plan or the new one.
// The schema is etcdagent.v1.MemberState in protobuf's JSON mapping.

#include <optional>
#include <string>

#include "common/error.hpp"
#include "etcdagent/v1/agent.pb.h"

namespace etcdagent::agent {

std::string stateToJson(const v1::MemberState& state);
// `source` names the text in messages.
Result<v1::MemberState> stateFromJson(const std::string& text, const std::string& source);

// nullopt when there is no state file (no plan accepted yet).
Result<std::optional<v1::MemberState>> loadState(const std::string& path);
Result<void> saveState(const std::string& path, const v1::MemberState& state);

}  // namespace etcdagent::agent
