#include "fleet/inventory.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <set>

#include "common/file_util.hpp"
#include "common/toml_reader.hpp"
#include "membership/membership.hpp"

namespace etcdagent::fleet {
namespace {

namespace fs = std::filesystem;

Result<std::uint64_t> parseHexId(const std::string& text) {
  if (text.empty() || text.size() > 16 ||
      text.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos) {
    return fail(Errc::kInvalidArgument, "expected a hex member ID (as `member list` prints it)");
  }
  return std::stoull(text, nullptr, 16);
}

// TOML basic string with the escapes the spec requires.
std::string quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

bool bareKey(std::string_view key) {
  return !key.empty() && std::all_of(key.begin(), key.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_';
  });
}

}  // namespace

std::string hostPortOf(std::string_view url) {
  auto scheme = url.find("://");
  std::string_view rest = scheme == std::string_view::npos ? url : url.substr(scheme + 3);
  return std::string(rest.substr(0, rest.find('/')));
}

std::string endpointOf(std::string_view url) {
  return url.starts_with("https://") ? "https://" + hostPortOf(url) : hostPortOf(url);
}

const InventoryMember* Inventory::find(std::string_view name) const {
  auto it = std::find_if(members.begin(), members.end(),
                         [&](const InventoryMember& m) { return m.name == name; });
  return it == members.end() ? nullptr : &*it;
}

InventoryMember* Inventory::find(std::string_view name) {
  return const_cast<InventoryMember*>(std::as_const(*this).find(name));
}

const InventoryMember* Inventory::findById(std::uint64_t id) const {
  if (id == 0) return nullptr;
  auto it = std::find_if(members.begin(), members.end(),
                         [&](const InventoryMember& m) { return m.id == id; });
  return it == members.end() ? nullptr : &*it;
}

std::vector<std::string> Inventory::clientEndpoints() const {
  std::vector<std::string> out;
  for (const auto& m : members) {
    if (!m.client_url.empty()) out.push_back(endpointOf(m.client_url));
  }
  return out;
}

std::string defaultInventoryPath(const std::function<const char*(const char*)>& getenv) {
  const char* xdg = getenv("XDG_CONFIG_HOME");
  if (xdg != nullptr && *xdg == '/') return std::string(xdg) + "/etcd-fleet/fleet.toml";
  const char* home = getenv("HOME");
  std::string base = home != nullptr && *home != '\0' ? home : ".";
  return base + "/.config/etcd-fleet/fleet.toml";
}

Result<Inventory> parseInventory(std::string_view text, std::string_view source) {
  auto parsed = parseToml(text, source);
  if (!parsed) return fail(parsed.error());
  const toml::table& root = *parsed;
  TomlChecker check(source);
  Inventory inv;
  inv.path = std::string(source);

  for (const auto& [k, v] : root) {
    if (k.str() == "cluster" || k.str() == "replace" || k.str() == "tls" || k.str() == "restore") {
      if (!v.is_table())
        check.error(v.source(), k.str(), "expected a table [" + std::string(k.str()) + "]");
    } else if (k.str() == "member") {
      if (!v.is_array_of_tables()) check.error(v.source(), k.str(), "expected [[member]] tables");
    } else {
      check.error(k.source(), k.str(),
                  "unknown section or key (known: [cluster], [[member]], [replace], [tls], "
                  "[restore])");
    }
  }

  const toml::table* cluster_table = root["cluster"].as_table();
  TomlSection cluster(check, cluster_table ? *cluster_table : emptyTomlTable(), "cluster");
  cluster.string("token", inv.cluster_token);
  cluster.rejectUnknown();

  std::set<std::string> names;
  if (const toml::array* members = root["member"].as_array()) {
    if (members->size() > kMaxInventoryMembers) {
      return fail(Errc::kInvalidArgument,
                  std::string(source) + ":" +
                      std::to_string((*members)[kMaxInventoryMembers].source().begin.line) +
                      ":1: member: the inventory lists " + std::to_string(members->size()) +
                      " members; a fleet has at most " + std::to_string(kMaxInventoryMembers) +
                      " (etcd clusters are 3, 5 or 7 members): this is not a file etcd-fleet "
                      "wrote");
    }
    for (const auto& node : *members) {
      const toml::table* t = node.as_table();
      if (t == nullptr) continue;  // reported above
      TomlSection m(check, *t, "member");
      InventoryMember member;
      std::string id;
      m.string("name", member.name);
      m.string("host", member.host);
      m.string("agent", member.agent);
      m.string("client_url", member.client_url);
      m.string("peer_url", member.peer_url);
      m.string("id", id);
      m.rejectUnknown();
      if (member.name.empty()) {
        check.error(t->source(), "member.name", "every [[member]] needs a name");
      } else if (!names.insert(member.name).second) {
        check.error(m.at("name"), "member.name", "member \"" + member.name + "\" is listed twice");
      }
      if (!id.empty()) {
        auto parsed_id = parseHexId(id);
        if (!parsed_id) {
          check.error(m.at("id"), "member.id", parsed_id.error().message + ", got \"" + id + "\"");
        } else {
          member.id = *parsed_id;
        }
      }
      inv.members.push_back(std::move(member));
    }
  }

  // The journals are string tables their flows own (and check).
  for (auto [name, journal] : {std::pair{"replace", &inv.replace}, std::pair{"tls", &inv.tls},
                               std::pair{"restore", &inv.restore}}) {
    const toml::table* table = root[name].as_table();
    if (table == nullptr) continue;
    for (const auto& [k, v] : *table) {
      if (!v.is_string()) {
        check.error(v.source(), std::string(name) + "." + std::string(k.str()),
                    "expected a string, got " + tomlTypeName(v));
        continue;
      }
      (*journal)[std::string(k.str())] = v.as_string()->get();
    }
  }

  if (!check.ok()) return fail(Errc::kInvalidArgument, check.message());
  if (inv.members.empty()) {
    // etcd-fleet never writes an inventory without members: an empty file is a damaged one (a
    // truncated copy), and treating it as "no fleet" would send commands to 127.0.0.1:2379.
    return fail(Errc::kInvalidArgument, std::string(source) +
                                            ":1:1: the inventory lists no [[member]]" +
                                            (root.empty() ? " (the file is empty)" : "") +
                                            ": it is damaged or not one etcd-fleet wrote");
  }
  return inv;
}

std::string renderInventory(const Inventory& inv) {
  std::string out =
      "# The fleet inventory, written by etcd-fleet (bootstrap, member add/remove/replace).\n"
      "# Later etcd-fleet commands use it when no --endpoints is given.\n\n";
  out += "[cluster]\ntoken = " + quote(inv.cluster_token) + "\n";
  for (const auto& m : inv.members) {
    out += "\n[[member]]\nname = " + quote(m.name) + "\n";
    if (!m.host.empty()) out += "host = " + quote(m.host) + "\n";
    if (!m.agent.empty()) out += "agent = " + quote(m.agent) + "\n";
    if (!m.client_url.empty()) out += "client_url = " + quote(m.client_url) + "\n";
    if (!m.peer_url.empty()) out += "peer_url = " + quote(m.peer_url) + "\n";
    if (m.id != 0) out += "id = " + quote(membership::hexId(m.id)) + "\n";
  }
  auto journal = [&](const std::map<std::string, std::string>& table, const char* name,
                     const char* command) {
    if (table.empty()) return;
    out += std::string("\n# An unfinished `etcd-fleet ") + command + "`: re-run it to finish.\n[" +
           name + "]\n";
    for (const auto& [k, v] : table) out += (bareKey(k) ? k : quote(k)) + " = " + quote(v) + "\n";
  };
  journal(inv.replace, "replace", "member replace");
  journal(inv.tls, "tls", "tls enable");
  journal(inv.restore, "restore", "restore");
  return out;
}

Result<std::optional<Inventory>> loadInventory(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return std::optional<Inventory>{};
  auto text = readFile(path);
  if (!text) return fail(text.error());
  auto inv = parseInventory(*text, path);
  if (!inv) return fail(inv.error());
  return std::optional<Inventory>(std::move(*inv));
}

Result<Inventory> requireInventory(const std::string& path, std::string_view hint) {
  auto loaded = loadInventory(path);
  if (!loaded) return fail(loaded.error());
  if (!*loaded) {
    return fail(Errc::kNotFound, "no fleet inventory at " + path + ": " + std::string(hint));
  }
  return std::move(**loaded);
}

Result<void> saveInventory(const Inventory& inv) {
  if (inv.path.empty()) return fail(Errc::kInvalidArgument, "the inventory has no path");
  const fs::path dir = fs::path(inv.path).parent_path();
  if (!dir.empty()) {
    std::error_code ec;
    if (!fs::exists(dir, ec)) {
      fs::create_directories(dir, ec);
      if (ec) return fail(Errc::kIo, "cannot create " + dir.string() + ": " + ec.message());
      ::chmod(dir.c_str(), 0700);
    }
  }
  return writeFileAtomic(inv.path, renderInventory(inv), 0600);
}

bool clusterServesTls(const std::optional<Inventory>& inventory,
                      const std::vector<std::string>& endpoints) {
  if (inventory && !inventory->members.empty()) {
    return std::any_of(inventory->members.begin(), inventory->members.end(),
                       [](const InventoryMember& m) { return m.peer_url.starts_with("https://"); });
  }
  return std::any_of(endpoints.begin(), endpoints.end(),
                     [](const std::string& e) { return e.starts_with("https://"); });
}

}  // namespace etcdagent::fleet
