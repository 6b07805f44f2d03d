#pragma once

// State files in protobuf's JSON mapping (etcd-fleet's pki/tokens.json and pki/rotation.json, the
// agent's state.json, discovery tokens and snapshot records): read ignoring fields a newer writer
// added, written with the proto's field names, indented, so that a human can read them and an
// older reader keeps what it knows.

#include <google/protobuf/message.h>

#include <string>
#include <string_view>

#include "common/error.hpp"

namespace etcdagent {

// The parser's complaint as a kInvalidArgument error (the caller says which file, and what to do).
Result<void> parseStateJson(std::string_view text, google::protobuf::Message& out);
// `every_field`: fields at their default value are written too (etcd-fleet's files: a reader sees
// every field there is); else only the ones set (the agent's files, as they always were).
std::string renderStateJson(const google::protobuf::Message& message, bool every_field = true);

}  // namespace etcdagent
