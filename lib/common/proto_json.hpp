#pragma once

// etcd-fleet's state files in protobuf's JSON mapping (pki/tokens.json, pki/rotation.json): read
// ignoring fields a newer etcd-fleet added, written with the proto's field names, every field,
// indented, so that a human can read them and an older reader keeps what it knows.

#include <google/protobuf/message.h>

#include <string>
#include <string_view>

#include "common/error.hpp"

namespace etcdagent::fleet {

// The parser's complaint as a kInvalidArgument error (the caller says which file, and what to do).
Result<void> parseStateJson(std::string_view text, google::protobuf::Message& out);
std::string renderStateJson(const google::protobuf::Message& message);

}  // namespace etcdagent::fleet
