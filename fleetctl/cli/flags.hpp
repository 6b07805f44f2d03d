#pragma once

// A flag set with pflag's (and so etcdctl's) command-line grammar:
//   --name=value, --name value, -n value, -nvalue, -n=value, --bool, --bool=false,
//   repeated or comma-separated --slice values, positional arguments anywhere, "--" ends flags.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/duration.hpp"
#include "common/error.hpp"

namespace etcdagent::fleet {

enum class FlagType { kBool, kString, kInt, kUint, kDuration, kStringSlice, kFloat };

struct Flag {
  std::string name;
  char shorthand = 0;
  FlagType type = FlagType::kString;
  std::string default_value;  // textual, as shown in usage
  std::string usage;
  bool hidden = false;
  bool positive = false;  // kDuration: 0 and negative durations are refused

  // state
  bool changed = false;
  std::string value;                // current value (textual)
  std::vector<std::string> values;  // kStringSlice
};

class FlagSet {
 public:
  FlagSet& boolean(std::string name, char shorthand, bool def, std::string usage);
  FlagSet& string(std::string name, char shorthand, std::string def, std::string usage);
  FlagSet& integer(std::string name, char shorthand, std::int64_t def, std::string usage);
  FlagSet& uinteger(std::string name, char shorthand, std::uint64_t def, std::string usage);
  FlagSet& floating(std::string name, char shorthand, double def, std::string usage);
  FlagSet& duration(std::string name, char shorthand, std::string def, std::string usage);
  // A duration that must be more than 0 (a timeout: etcdctl takes "-5s" and then fails every
  // request with "context deadline exceeded").
  FlagSet& positiveDuration(std::string name, char shorthand, std::string def, std::string usage);
  FlagSet& stringSlice(std::string name, char shorthand, std::vector<std::string> def,
                       std::string usage);

  // Typed reads. Values were validated when set, so these cannot fail for a registered flag.
  [[nodiscard]] bool getBool(std::string_view name) const;
  [[nodiscard]] std::string getString(std::string_view name) const;
  [[nodiscard]] std::int64_t getInt(std::string_view name) const;
  [[nodiscard]] std::uint64_t getUint(std::string_view name) const;
  [[nodiscard]] double getFloat(std::string_view name) const;
  [[nodiscard]] Duration getDuration(std::string_view name) const;
  [[nodiscard]] std::vector<std::string> getStringSlice(std::string_view name) const;
  [[nodiscard]] bool changed(std::string_view name) const;

  // Sets a flag as if given on the command line (used for environment variables too).
  Result<void> set(std::string_view name, std::string_view value);

  Flag* find(std::string_view name);
  Flag* findShort(char shorthand);
  [[nodiscard]] const Flag* find(std::string_view name) const;
  [[nodiscard]] const std::vector<Flag>& flags() const { return flags_; }

  // pflag-style listing: "      --limit=0\t\tMaximum number of results"
  [[nodiscard]] std::string usageText() const;

 private:
  FlagSet& add(Flag flag);
  std::vector<Flag> flags_;
};

// Splits argv into positional arguments, applying flags to the first set that knows them
// (a command's own flags, then the global ones).
Result<std::vector<std::string>> parseArgs(const std::vector<std::string>& args,
                                           const std::vector<FlagSet*>& sets);

}  // namespace etcdagent::fleet
