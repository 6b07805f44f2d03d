#include "common/toml_reader.hpp"

#include <algorithm>

#include "common/toml_screen.hpp"

namespace etcdagent {

Result<toml::table> parseToml(std::string_view text, std::string_view source) {
  // What toml++ cannot be trusted with never reaches it (toml_screen.hpp).
  auto screen = TomlScreen::of(text, source);
  if (!screen) return std::unexpected(screen.error());
  try {
    toml::table root = toml::parse(screen->text(), source);
    if (auto restored = screen->restore(root); !restored) {
      return std::unexpected(restored.error());
    }
    return root;
  } catch (const toml::parse_error& e) {
    const auto& where = e.source();
    return fail(Errc::kInvalidArgument,
                std::string(source) + ":" + std::to_string(where.begin.line) + ":" +
                    std::to_string(where.begin.column) + ": " +
                    screen->restoreMessage(e.description(), where.begin.line, where.begin.column));
  } catch (const std::exception& e) {
    // toml++ reports bad input as parse_error; anything else (bad_alloc on a huge file) must not
    // escape either.
    return fail(Errc::kInvalidArgument,
                std::string(source) + ": cannot be read as TOML: " + std::string(e.what()));
  }
}

void TomlChecker::error(const toml::source_region& where, std::string_view key,
                        std::string_view message) {
  if (!first_.empty()) return;
  first_ = source_ + ":" + std::to_string(where.begin.line) + ":" +
           std::to_string(where.begin.column) + ": " + std::string(key) + ": " +
           std::string(message);
}

std::string tomlTypeName(const toml::node& n) {
  switch (n.type()) {
    case toml::node_type::string: return "a string";
    case toml::node_type::integer: return "an integer";
    case toml::node_type::floating_point: return "a number";
    case toml::node_type::boolean: return "a boolean";
    case toml::node_type::array: return "an array";
    case toml::node_type::table: return "a table";
    default: return "a date/time";
  }
}

void TomlSection::string(std::string_view key, std::string& out) {
  known_.emplace_back(key);
  const toml::node* n = table_.get(key);
  if (n == nullptr) return;
  if (auto v = n->value<std::string>(); v && n->is_string()) {
    out = *v;
    return;
  }
  check_.error(n->source(), qualified(key), "expected a string, got " + tomlTypeName(*n));
}

void TomlSection::integer(std::string_view key, std::int64_t& out) {
  known_.emplace_back(key);
  const toml::node* n = table_.get(key);
  if (n == nullptr) return;
  if (n->is_integer()) {
    out = n->as_integer()->get();
    return;
  }
  check_.error(n->source(), qualified(key), "expected an integer, got " + tomlTypeName(*n));
}

void TomlSection::boolean(std::string_view key, bool& out) {
  known_.emplace_back(key);
  const toml::node* n = table_.get(key);
  if (n == nullptr) return;
  if (n->is_boolean()) {
    out = n->as_boolean()->get();
    return;
  }
  check_.error(n->source(), qualified(key), "expected true or false, got " + tomlTypeName(*n));
}

void TomlSection::strings(std::string_view key, std::vector<std::string>& out) {
  known_.emplace_back(key);
  const toml::node* n = table_.get(key);
  if (n == nullptr) return;
  const toml::array* arr = n->as_array();
  if (arr == nullptr) {
    check_.error(n->source(), qualified(key),
                 "expected an array of strings, got " + tomlTypeName(*n));
    return;
  }
  out.clear();
  for (const auto& item : *arr) {
    if (!item.is_string()) {
      check_.error(item.source(), qualified(key),
                   "expected an array of strings, found " + tomlTypeName(item));
      return;
    }
    out.push_back(item.as_string()->get());
  }
}

void TomlSection::rejectUnknown() {
  for (const auto& [k, v] : table_) {
    if (std::find(known_.begin(), known_.end(), k.str()) != known_.end()) continue;
    std::string list;
    for (const auto& key : known_) list += (list.empty() ? "" : ", ") + key;
    check_.error(k.source().begin.line ? k.source() : v.source(), qualified(k.str()),
                 "unknown key in [" + name_ + "] (known keys: " + list + ")");
  }
}

toml::source_region TomlSection::at(std::string_view key) const {
  const toml::node* n = table_.get(key);
  return n != nullptr ? n->source() : table_.source();
}

const toml::table& emptyTomlTable() {
  static const toml::table empty;
  return empty;
}

}  // namespace etcdagent
