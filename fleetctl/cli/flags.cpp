#include "fleetctl/cli/flags.hpp"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <sstream>

#include "common/strings.hpp"

namespace etcdagent::fleet {
namespace {

Result<bool> parseBool(std::string_view v) {
  // strconv.ParseBool
  if (v == "1" || v == "t" || v == "T" || v == "true" || v == "TRUE" || v == "True") return true;
  if (v == "0" || v == "f" || v == "F" || v == "false" || v == "FALSE" || v == "False")
    return false;
  return fail(Errc::kInvalidArgument,
              "strconv.ParseBool: parsing \"" + std::string(v) + "\": invalid syntax");
}

template <class T>
Result<T> parseNumber(std::string_view v) {
  T out{};
  auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (ec != std::errc() || ptr != v.data() + v.size() || v.empty()) {
    return fail(Errc::kInvalidArgument, "invalid number \"" + std::string(v) + "\"");
  }
  return out;
}

std::string joinSlice(const std::vector<std::string>& v) {
  return "[" + join(v, ",") + "]";
}

}  // namespace

FlagSet& FlagSet::add(Flag flag) {
  flag.value = flag.default_value;
  flags_.push_back(std::move(flag));
  return *this;
}

FlagSet& FlagSet::boolean(std::string name, char s, bool def, std::string usage) {
  return add({std::move(name), s, FlagType::kBool, def ? "true" : "false", std::move(usage)});
}
FlagSet& FlagSet::string(std::string name, char s, std::string def, std::string usage) {
  return add({std::move(name), s, FlagType::kString, std::move(def), std::move(usage)});
}
FlagSet& FlagSet::integer(std::string name, char s, std::int64_t def, std::string usage) {
  return add({std::move(name), s, FlagType::kInt, std::to_string(def), std::move(usage)});
}
FlagSet& FlagSet::uinteger(std::string name, char s, std::uint64_t def, std::string usage) {
  return add({std::move(name), s, FlagType::kUint, std::to_string(def), std::move(usage)});
}
FlagSet& FlagSet::floating(std::string name, char s, double def, std::string usage) {
  std::ostringstream os;
  os << def;
  return add({std::move(name), s, FlagType::kFloat, os.str(), std::move(usage)});
}
FlagSet& FlagSet::duration(std::string name, char s, std::string def, std::string usage) {
  return add({std::move(name), s, FlagType::kDuration, std::move(def), std::move(usage)});
}

FlagSet& FlagSet::positiveDuration(std::string name, char s, std::string def, std::string usage) {
  Flag f{std::move(name), s, FlagType::kDuration, std::move(def), std::move(usage)};
  f.positive = true;
  return add(std::move(f));
}
FlagSet& FlagSet::stringSlice(std::string name, char s, std::vector<std::string> def,
                              std::string usage) {
  Flag f{std::move(name), s, FlagType::kStringSlice, joinSlice(def), std::move(usage)};
  f.values = std::move(def);
  return add(std::move(f));
}

Flag* FlagSet::find(std::string_view name) {
  for (auto& f : flags_) {
    if (f.name == name) return &f;
  }
  return nullptr;
}
const Flag* FlagSet::find(std::string_view name) const {
  for (const auto& f : flags_) {
    if (f.name == name) return &f;
  }
  return nullptr;
}
Flag* FlagSet::findShort(char c) {
  for (auto& f : flags_) {
    if (f.shorthand == c) return &f;
  }
  return nullptr;
}

Result<void> FlagSet::set(std::string_view name, std::string_view value) {
  Flag* f = find(name);
  if (f == nullptr) return fail(Errc::kInvalidArgument, "unknown flag: --" + std::string(name));
  auto invalid = [&](const Error& e) {
    return fail(Errc::kInvalidArgument, "invalid argument \"" + std::string(value) + "\" for \"--" +
                                            f->name + "\" flag: " + e.message);
  };
  switch (f->type) {
    case FlagType::kBool: {
      auto b = parseBool(value);
      if (!b) return invalid(b.error());
      f->value = *b ? "true" : "false";
      break;
    }
    case FlagType::kInt: {
      auto n = parseNumber<std::int64_t>(value);
      if (!n) return invalid(n.error());
      f->value = std::to_string(*n);
      break;
    }
    case FlagType::kUint: {
      auto n = parseNumber<std::uint64_t>(value);
      if (!n) return invalid(n.error());
      f->value = std::to_string(*n);
      break;
    }
    case FlagType::kFloat: {
      char* end = nullptr;
      std::string v(value);
      std::strtod(v.c_str(), &end);
      if (v.empty() || end != v.c_str() + v.size())
        return invalid(Error{Errc::kInvalidArgument, "invalid number"});
      f->value = v;
      break;
    }
    case FlagType::kDuration: {
      auto d = parseDuration(value);
      if (!d) return invalid(d.error());
      if (f->positive && d->count() <= 0)
        return invalid(Error{Errc::kInvalidArgument, "a timeout must be more than 0 (e.g. 5s)"});
      f->value = std::string(value);
      break;
    }
    case FlagType::kStringSlice: {
      // pflag: the first use replaces the default, later uses append.
      if (!f->changed) f->values.clear();
      // pflag's string slice: an empty value is an empty list, else every item, empty ones too.
      if (!value.empty()) {
        for (auto& v : splitComma(value)) f->values.push_back(std::move(v));
      }
      f->value = joinSlice(f->values);
      break;
    }
    case FlagType::kString: f->value = std::string(value); break;
  }
  f->changed = true;
  return {};
}

bool FlagSet::getBool(std::string_view name) const {
  const Flag* f = find(name);
  return f != nullptr && f->value == "true";
}
std::string FlagSet::getString(std::string_view name) const {
  const Flag* f = find(name);
  return f ? f->value : std::string();
}
std::int64_t FlagSet::getInt(std::string_view name) const {
  const Flag* f = find(name);
  if (!f) return 0;
  return parseNumber<std::int64_t>(f->value).value_or(0);
}
std::uint64_t FlagSet::getUint(std::string_view name) const {
  const Flag* f = find(name);
  if (!f) return 0;
  return parseNumber<std::uint64_t>(f->value).value_or(0);
}
double FlagSet::getFloat(std::string_view name) const {
  const Flag* f = find(name);
  return f ? std::strtod(f->value.c_str(), nullptr) : 0.0;
}
Duration FlagSet::getDuration(std::string_view name) const {
  const Flag* f = find(name);
  if (!f) return Duration{0};
  return parseDuration(f->value).value_or(Duration{0});
}
std::vector<std::string> FlagSet::getStringSlice(std::string_view name) const {
  const Flag* f = find(name);
  return f ? f->values : std::vector<std::string>{};
}
bool FlagSet::changed(std::string_view name) const {
  const Flag* f = find(name);
  return f != nullptr && f->changed;
}

std::string FlagSet::usageText() const {
  std::vector<const Flag*> sorted;
  for (const auto& f : flags_) {
    if (!f.hidden) sorted.push_back(&f);
  }
  std::sort(sorted.begin(), sorted.end(),
            [](const Flag* a, const Flag* b) { return a->name < b->name; });
  std::ostringstream os;
  for (const Flag* f : sorted) {
    std::string left =
        f->shorthand ? std::string("  -") + f->shorthand + ", --" : std::string("      --");
    left += f->name;
    switch (f->type) {
      case FlagType::kBool: left += "[=" + f->default_value + "]"; break;
      case FlagType::kString: left += "=\"" + f->default_value + "\""; break;
      default: left += "=" + f->default_value;
    }
    os << left;
    // pflag pads with tabs to the next tab stop group
    std::size_t width = left.size();
    int tabs = width < 16 ? 3 : width < 24 ? 2 : 1;
    for (int i = 0; i < tabs; ++i) os << '\t';
    os << f->usage << '\n';
  }
  return os.str();
}

Result<std::vector<std::string>> parseArgs(const std::vector<std::string>& args,
                                           const std::vector<FlagSet*>& sets) {
  std::vector<std::string> positional;
  auto findLong = [&](std::string_view name) -> std::pair<FlagSet*, Flag*> {
    for (FlagSet* s : sets) {
      if (Flag* f = s->find(name)) return {s, f};
    }
    return {nullptr, nullptr};
  };
  auto findShort = [&](char c) -> std::pair<FlagSet*, Flag*> {
    for (FlagSet* s : sets) {
      if (Flag* f = s->findShort(c)) return {s, f};
    }
    return {nullptr, nullptr};
  };

  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") {
      positional.insert(positional.end(), args.begin() + static_cast<std::ptrdiff_t>(i) + 1,
                        args.end());
      break;
    }
    if (a.size() > 2 && a.starts_with("--")) {
      std::string body = a.substr(2);
      std::optional<std::string> value;
      if (auto eq = body.find('='); eq != std::string::npos) {
        value = body.substr(eq + 1);
        body.resize(eq);
      }
      auto [set, flag] = findLong(body);
      if (flag == nullptr) return fail(Errc::kInvalidArgument, "unknown flag: --" + body);
      if (!value) {
        if (flag->type == FlagType::kBool) {
          value = "true";
        } else if (i + 1 < args.size()) {
          value = args[++i];
        } else {
          return fail(Errc::kInvalidArgument, "flag needs an argument: --" + body);
        }
      }
      if (auto r = set->set(body, *value); !r) return fail(r.error());
      continue;
    }
    if (a.size() > 1 && a[0] == '-' && a != "-") {
      // one or more shorthand flags: -abc, -w json, -wjson, -w=json
      for (std::size_t k = 1; k < a.size(); ++k) {
        char c = a[k];
        auto [set, flag] = findShort(c);
        if (flag == nullptr) {
          return fail(Errc::kInvalidArgument,
                      std::string("unknown shorthand flag: '") + c + "' in " + a);
        }
        std::string rest = a.substr(k + 1);
        if (rest.starts_with('=')) {
          if (auto r = set->set(flag->name, rest.substr(1)); !r) return fail(r.error());
          break;
        }
        if (flag->type == FlagType::kBool) {
          if (auto r = set->set(flag->name, "true"); !r) return fail(r.error());
          continue;
        }
        std::string value;
        if (!rest.empty()) {
          value = rest;
        } else if (i + 1 < args.size()) {
          value = args[++i];
        } else {
          return fail(Errc::kInvalidArgument,
                      std::string("flag needs an argument: '") + c + "' in -" + c);
        }
        if (auto r = set->set(flag->name, value); !r) return fail(r.error());
        break;
      }
      continue;
    }
    positional.push_back(a);
  }
  return positional;
}

}  // namespace etcdagent::fleet
