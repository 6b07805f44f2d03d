#pragma once

// etcdctl's -w json is Go's encoding/json applied to etcd's gogoproto structs. This reproduces
// it from protobuf reflection:
//   - keys are the .proto field names (cluster_id, create_revision, peerURLs, isLearner);
//   - every field is `omitempty`: zero numbers, false, "", empty lists and unset messages vanish;
//   - 64-bit integers are plain JSON numbers (not strings as in protobuf's JSON mapping);
//   - bytes are base64; enums are numbers;
//   - a oneof is the Go interface field: {"Response":{"ResponsePut":{...}}}.

#include <google/protobuf/message.h>

#include <ostream>
#include <string>
#include <string_view>

#include "fleetctl/output/format.hpp"

namespace etcdagent::fleet {

std::string toGoJson(const google::protobuf::Message& message);

// The json form of a printer whose first argument is the response etcdctl prints with printJSON:
// that message, then a newline. `Rest` are the printer's other arguments, unused here.
template <class Message, class... Rest>
void printJson(const Output& o, const Message& m, Rest...) {
  o.out << toGoJson(m) << "\n";
}

// "response_range" -> "ResponseRange", as protoc-gen-go names Go fields.
std::string goCamelCase(std::string_view protoName);

// A small builder for the JSON objects etcdctl prints from its own Go structs
// (endpoint health/status, watch events): keys in insertion order, values already encoded.
class JsonObject {
 public:
  JsonObject& raw(std::string_view key, std::string_view json);
  JsonObject& str(std::string_view key, std::string_view value);
  JsonObject& num(std::string_view key, long long value);
  JsonObject& unum(std::string_view key, unsigned long long value);
  JsonObject& boolean(std::string_view key, bool value);
  [[nodiscard]] std::string str() const { return body_.empty() ? "{}" : "{" + body_ + "}"; }

 private:
  std::string body_;
};

}  // namespace etcdagent::fleet
