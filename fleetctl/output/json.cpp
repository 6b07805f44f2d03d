#include "fleetctl/output/json.hpp"

#include <google/protobuf/descriptor.h>

#include "common/encoding.hpp"

namespace etcdagent::fleet {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

std::string scalar(const Message& m, const Reflection& r, const FieldDescriptor& f, int index) {
  const bool rep = f.is_repeated();
  switch (f.cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
      return std::to_string(rep ? r.GetRepeatedInt32(m, &f, index) : r.GetInt32(m, &f));
    case FieldDescriptor::CPPTYPE_INT64:
      return std::to_string(rep ? r.GetRepeatedInt64(m, &f, index) : r.GetInt64(m, &f));
    case FieldDescriptor::CPPTYPE_UINT32:
      return std::to_string(rep ? r.GetRepeatedUInt32(m, &f, index) : r.GetUInt32(m, &f));
    case FieldDescriptor::CPPTYPE_UINT64:
      return std::to_string(rep ? r.GetRepeatedUInt64(m, &f, index) : r.GetUInt64(m, &f));
    case FieldDescriptor::CPPTYPE_DOUBLE:
      return std::to_string(rep ? r.GetRepeatedDouble(m, &f, index) : r.GetDouble(m, &f));
    case FieldDescriptor::CPPTYPE_FLOAT:
      return std::to_string(rep ? r.GetRepeatedFloat(m, &f, index) : r.GetFloat(m, &f));
    case FieldDescriptor::CPPTYPE_BOOL:
      return (rep ? r.GetRepeatedBool(m, &f, index) : r.GetBool(m, &f)) ? "true" : "false";
    case FieldDescriptor::CPPTYPE_ENUM:
      return std::to_string(rep ? r.GetRepeatedEnumValue(m, &f, index) : r.GetEnumValue(m, &f));
    case FieldDescriptor::CPPTYPE_STRING: {
      std::string s = rep ? r.GetRepeatedString(m, &f, index) : r.GetString(m, &f);
      return f.type() == FieldDescriptor::TYPE_BYTES ? "\"" + base64Encode(s) + "\"" : jsonQuote(s);
    }
    case FieldDescriptor::CPPTYPE_MESSAGE:
      return toGoJson(rep ? r.GetRepeatedMessage(m, &f, index) : r.GetMessage(m, &f));
  }
  return "null";
}

// Go's omitempty: the zero value of the field's type is left out.
bool isEmpty(const Message& m, const Reflection& r, const FieldDescriptor& f) {
  if (f.is_repeated()) return r.FieldSize(m, &f) == 0;
  switch (f.cpp_type()) {
    case FieldDescriptor::CPPTYPE_MESSAGE: return !r.HasField(m, &f);
    case FieldDescriptor::CPPTYPE_INT32: return r.GetInt32(m, &f) == 0;
    case FieldDescriptor::CPPTYPE_INT64: return r.GetInt64(m, &f) == 0;
    case FieldDescriptor::CPPTYPE_UINT32: return r.GetUInt32(m, &f) == 0;
    case FieldDescriptor::CPPTYPE_UINT64: return r.GetUInt64(m, &f) == 0;
    case FieldDescriptor::CPPTYPE_DOUBLE: return r.GetDouble(m, &f) == 0;
    case FieldDescriptor::CPPTYPE_FLOAT: return r.GetFloat(m, &f) == 0;
    case FieldDescriptor::CPPTYPE_BOOL: return !r.GetBool(m, &f);
    case FieldDescriptor::CPPTYPE_ENUM: return r.GetEnumValue(m, &f) == 0;
    case FieldDescriptor::CPPTYPE_STRING: return r.GetString(m, &f).empty();
  }
  return true;
}

std::string value(const Message& m, const Reflection& r, const FieldDescriptor& f) {
  if (!f.is_repeated()) return scalar(m, r, f, 0);
  std::string out = "[";
  for (int i = 0; i < r.FieldSize(m, &f); ++i) {
    if (i) out += ",";
    out += scalar(m, r, f, i);
  }
  return out + "]";
}

}  // namespace

std::string goCamelCase(std::string_view name) {
  std::string out;
  bool upper = true;
  for (char c : name) {
    if (c == '_') {
      upper = true;
      continue;
    }
    if (upper && c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
    upper = false;
    out += c;
  }
  return out;
}

std::string toGoJson(const Message& m) {
  const auto* d = m.GetDescriptor();
  const auto* r = m.GetReflection();
  std::string out = "{";
  bool first = true;
  auto emit = [&](std::string_view key, const std::string& json) {
    if (!first) out += ",";
    first = false;
    out += "\"";
    out += key;
    out += "\":";
    out += json;
  };
  for (int i = 0; i < d->field_count(); ++i) {
    const FieldDescriptor* f = d->field(i);
    if (const auto* oneof = f->real_containing_oneof()) {
      // Emitted once, at its first field, as the Go interface field.
      if (oneof->field(0) != f) continue;
      const FieldDescriptor* set = r->GetOneofFieldDescriptor(m, oneof);
      if (set == nullptr) continue;
      emit(goCamelCase(oneof->name()),
           "{\"" + goCamelCase(set->name()) + "\":" + value(m, *r, *set) + "}");
      continue;
    }
    if (isEmpty(m, *r, *f)) continue;
    emit(f->name(), value(m, *r, *f));
  }
  return out + "}";
}

JsonObject& JsonObject::raw(std::string_view key, std::string_view json) {
  if (!body_.empty()) body_ += ",";
  body_ += jsonQuote(key);
  body_ += ":";
  body_ += json;
  return *this;
}
JsonObject& JsonObject::str(std::string_view key, std::string_view value) {
  return raw(key, jsonQuote(value));
}
JsonObject& JsonObject::num(std::string_view key, long long value) {
  return raw(key, std::to_string(value));
}
JsonObject& JsonObject::unum(std::string_view key, unsigned long long value) {
  return raw(key, std::to_string(value));
}
JsonObject& JsonObject::boolean(std::string_view key, bool value) {
  return raw(key, value ? "true" : "false");
}

}  // namespace etcdagent::fleet
