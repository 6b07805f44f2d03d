#include "common/proto_json.hpp"

#include <google/protobuf/util/json_util.h>

namespace etcdagent {

Result<void> parseStateJson(std::string_view text, google::protobuf::Message& out) {
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;  // written by a newer etcd-fleet: keep what we know
  auto status = google::protobuf::util::JsonStringToMessage(
      google::protobuf::StringPiece(text.data(), text.size()), &out, options);
  if (!status.ok()) return fail(Errc::kInvalidArgument, std::string(status.message()));
  return {};
}

std::string renderStateJson(const google::protobuf::Message& message, bool every_field) {
  std::string out;
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = every_field;
  // Cannot fail for the state files: every string in them is checked or plain text.
  (void)google::protobuf::util::MessageToJsonString(message, &out, options);
  return out;
}

}  // namespace etcdagent
