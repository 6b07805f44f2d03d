#pragma once

// Reading TOML files written by people (agent.toml, fleet.toml) with errors an operator can act
// on: every problem names "file:line:column: key: what was expected", unknown keys are errors
// (a typo must not be silently ignored), and the first problem wins (later ones are often its
// consequences).

#include <toml++/toml.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.hpp"

namespace etcdagent {

// Parses `text`; a syntax error becomes "source:line:col: description".
Result<toml::table> parseToml(std::string_view text, std::string_view source);

// Collects the first error in "source:line:col: key: message" form.
class TomlChecker {
 public:
  explicit TomlChecker(std::string_view source) : source_(source) {}

  void error(const toml::source_region& where, std::string_view key, std::string_view message);
  [[nodiscard]] bool ok() const { return first_.empty(); }
  [[nodiscard]] const std::string& message() const { return first_; }

 private:
  std::string source_;
  std::string first_;
};

// "a string", "an integer", ... for messages.
std::string tomlTypeName(const toml::node& node);

// Reads a table's keys into fields, reporting wrong types and (after rejectUnknown) unknown keys.
class TomlSection {
 public:
  TomlSection(TomlChecker& check, const toml::table& table, std::string name)
      : check_(check), table_(table), name_(std::move(name)) {}

  void string(std::string_view key, std::string& out);
  void integer(std::string_view key, std::int64_t& out);
  void boolean(std::string_view key, bool& out);
  void strings(std::string_view key, std::vector<std::string>& out);
  // Call after the known keys were read.
  void rejectUnknown();

  [[nodiscard]] const toml::node* node(std::string_view key) const { return table_.get(key); }
  // Where `key` is (the table's start when it is absent), for messages about its value.
  [[nodiscard]] toml::source_region at(std::string_view key) const;
  [[nodiscard]] std::string qualified(std::string_view key) const {
    return name_ + "." + std::string(key);
  }

 private:
  TomlChecker& check_;
  const toml::table& table_;
  std::string name_;
  std::vector<std::string> known_;
};

// An empty table, for sections that are absent.
const toml::table& emptyTomlTable();

}  // namespace etcdagent
