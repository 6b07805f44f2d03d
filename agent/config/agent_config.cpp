#include "agent/config/agent_config.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>

#include "agent/config/listen_address.hpp"
#include "agent/maintenance/defrag_policy.hpp"
#include "common/duration.hpp"
#include "common/file_util.hpp"
#include "common/toml_reader.hpp"

namespace etcdagent::agent {
namespace {

constexpr std::array<std::string_view, 9> kSections = {
    "member", "cluster", "agent", "etcd", "bootstrap", "enroll", "snapshot", "nospace", "defrag"};

KeyPosition positionOf(const toml::node& n) {
  return {n.source().begin.line, n.source().begin.column};
}

// Remembers where every key of the known sections is (and every extra_flags item), so that
// checks after parsing can name the line.
void recordPositions(const toml::table& root, AgentConfig& cfg) {
  for (auto section : kSections) {
    const toml::table* t = root[section].as_table();
    if (t == nullptr) continue;
    for (const auto& [k, v] : *t) {
      const std::string key = std::string(section) + "." + std::string(k.str());
      cfg.positions[key] = positionOf(v);
      if (const toml::array* items = v.as_array()) {
        for (std::size_t i = 0; i < items->size(); ++i) {
          cfg.positions[key + "[" + std::to_string(i) + "]"] = positionOf(*items->get(i));
        }
      }
    }
  }
}

void checkSections(const toml::table& root, TomlChecker& check) {
  for (const auto& [k, v] : root) {
    if (std::find(kSections.begin(), kSections.end(), k.str()) != kSections.end()) {
      if (!v.is_table()) {
        check.error(v.source(), k.str(), "expected a table [" + std::string(k.str()) + "]");
      }
      continue;
    }
    check.error(k.source(), k.str(),
                "unknown section or key (known sections: [member], [cluster], [agent], [etcd], "
                "[bootstrap], [enroll], [snapshot], [nospace], [defrag])");
  }
}

const toml::table& tableOf(const toml::table& root, std::string_view name) {
  const toml::table* t = root[name].as_table();
  return t != nullptr ? *t : emptyTomlTable();
}

// Ports are range-checked here: they are read as 64-bit integers.
void readMember(TomlChecker& check, const toml::table& root, MemberConfig& m) {
  TomlSection member(check, tableOf(root, "member"), "member");
  std::int64_t client_port = m.client_port;
  std::int64_t peer_port = m.peer_port;
  member.string("name", m.name);
  member.string("advertise_host", m.advertise_host);
  member.integer("client_port", client_port);
  member.integer("peer_port", peer_port);
  member.string("data_root", m.data_root);
  member.rejectUnknown();
  for (auto [key, value] : {std::pair{"client_port", client_port}, {"peer_port", peer_port}}) {
    if (value < 0 || value > 65535) {
      check.error(
          member.at(key), member.qualified(key),
          "expected a port 1..65535, or 0 to pick a free one, got " + std::to_string(value));
    }
  }
  if (client_port != 0 && client_port == peer_port) {
    check.error(member.at("peer_port"), "member.peer_port",
                "must differ from member.client_port (" + std::to_string(client_port) + ")");
  }
  m.client_port = static_cast<int>(std::clamp<std::int64_t>(client_port, 0, 65535));
  m.peer_port = static_cast<int>(std::clamp<std::int64_t>(peer_port, 0, 65535));
}

void readEtcd(TomlChecker& check, const toml::table& root, EtcdSection& e) {
  TomlSection etcd(check, tableOf(root, "etcd"), "etcd");
  auto quota = static_cast<std::int64_t>(e.quota_backend_bytes);
  etcd.string("binary", e.binary);
  etcd.string("etcdctl", e.etcdctl);
  etcd.string("auto_compaction_mode", e.auto_compaction_mode);
  etcd.string("auto_compaction_retention", e.auto_compaction_retention);
  etcd.integer("quota_backend_bytes", quota);
  etcd.strings("extra_flags", e.extra_flags);
  etcd.rejectUnknown();
  constexpr std::int64_t kMaxQuota = 8LL << 30;
  if (quota <= 0 || quota > kMaxQuota) {
    check.error(etcd.at("quota_backend_bytes"), "etcd.quota_backend_bytes",
                "expected 1..8589934592 bytes (etcd's suggested maximum is 8 GiB), got " +
                    std::to_string(quota));
  }
  e.quota_backend_bytes = static_cast<std::uint64_t>(std::clamp<std::int64_t>(quota, 1, kMaxQuota));
}

// [nospace]: recover, disarm_below_percent.
void readNospace(TomlChecker& check, const toml::table& root, NospaceSection& out) {
  TomlSection nospace(check, tableOf(root, "nospace"), "nospace");
  nospace.boolean("recover", out.recover);
  std::int64_t percent = out.disarm_below_percent;
  nospace.integer("disarm_below_percent", percent);
  nospace.rejectUnknown();
  if (percent < 10 || percent > 95) {
    check.error(nospace.at("disarm_below_percent"), "nospace.disarm_below_percent",
                "expected a percentage of etcd.quota_backend_bytes, 10..95, got " +
                    std::to_string(percent));
  }
  out.disarm_below_percent = static_cast<unsigned>(std::clamp<std::int64_t>(percent, 10, 95));
}

// [defrag]: auto, min_free_percent, min_free_bytes, window.
void readDefrag(TomlChecker& check, const toml::table& root, DefragSection& out) {
  TomlSection defrag(check, tableOf(root, "defrag"), "defrag");
  defrag.boolean("auto", out.automatic);
  std::int64_t percent = out.min_free_percent;
  defrag.integer("min_free_percent", percent);
  defrag.integer("min_free_bytes", out.min_free_bytes);
  defrag.string("window", out.window);
  defrag.rejectUnknown();
  if (percent < 1 || percent > 100) {
    check.error(
        defrag.at("min_free_percent"), "defrag.min_free_percent",
        "expected a percentage of the database file, 1..100, got " + std::to_string(percent));
  }
  out.min_free_percent = static_cast<unsigned>(std::clamp<std::int64_t>(percent, 1, 100));
  if (out.min_free_bytes < 0) {
    check.error(defrag.at("min_free_bytes"), "defrag.min_free_bytes",
                "expected a number of bytes, 0 or more, got " + std::to_string(out.min_free_bytes));
  }
  if (!out.window.empty()) {
    if (auto w = parseDailyWindow(out.window); !w) {
      check.error(defrag.at("window"), "defrag.window", w.error().message);
    }
  }
}

void readOthers(TomlChecker& check, const toml::table& root, AgentConfig& cfg) {
  TomlSection cluster(check, tableOf(root, "cluster"), "cluster");
  cluster.string("token", cfg.cluster.token);
  cluster.rejectUnknown();
  TomlSection agent(check, tableOf(root, "agent"), "agent");
  cfg.agent.api_listen = formatHostPort(cfg.member.advertise_host, kDefaultApiPort);
  agent.string("api_listen", cfg.agent.api_listen);
  agent.string("http_listen", cfg.agent.http_listen);
  agent.string("api_socket", cfg.agent.api_socket);
  agent.boolean("insecure", cfg.agent.insecure);
  agent.rejectUnknown();
  TomlSection bootstrap(check, tableOf(root, "bootstrap"), "bootstrap");
  bootstrap.string("discovery", cfg.bootstrap.discovery);
  bootstrap.string("join", cfg.bootstrap.join);
  bootstrap.rejectUnknown();
  TomlSection enroll(check, tableOf(root, "enroll"), "enroll");
  enroll.string("token_file", cfg.enroll.token_file);
  enroll.rejectUnknown();
}

// [snapshot]: schedule (a calendar time) or interval (a period), the directory, the retention.
void readSnapshot(TomlChecker& check, const toml::table& root, const MemberConfig& member,
                  SnapshotSettings& out) {
  TomlSection snapshot(check, tableOf(root, "snapshot"), "snapshot");
  std::string schedule = "daily";
  std::string interval;
  std::string drill = "daily";
  out.dir = member.data_root + "/snapshots";
  std::array<std::pair<const char*, unsigned*>, 4> keeps = {{
      {"keep_last", &out.retention.keep_last},
      {"keep_hourly", &out.retention.keep_hourly},
      {"keep_daily", &out.retention.keep_daily},
      {"keep_weekly", &out.retention.keep_weekly},
  }};
  snapshot.string("schedule", schedule);
  snapshot.string("interval", interval);
  snapshot.string("dir", out.dir);
  snapshot.string("drill", drill);
  std::string upload_command;
  std::string upload_timeout;
  snapshot.string("upload_command", upload_command);
  snapshot.string("upload_timeout", upload_timeout);
  snapshot.boolean("copy_to_peers", out.copy_to_peers);
  std::string scope = "member";
  snapshot.string("scope", scope);
  if (scope == "cluster") {
    out.scope = SnapshotSettings::Scope::kCluster;
  } else if (scope != "member") {
    check.error(snapshot.at("scope"), "snapshot.scope",
                "expected \"member\" (every agent snapshots its own member) or \"cluster\" "
                "(one agent, elected through etcd, snapshots the cluster), got \"" +
                    scope + "\"");
  }
  std::string compress = "none";
  snapshot.string("compress", compress);
  if (compress == "zstd") {
    out.compress = SnapshotCompression::kZstd;
  } else if (compress != "none") {
    check.error(
        snapshot.at("compress"), "snapshot.compress",
        "expected \"zstd\" (keep snapshots as NAME.db.zst) or \"none\", got \"" + compress + "\"");
  }
  std::int64_t keep_copies = out.keep_copies;
  snapshot.integer("keep_copies", keep_copies);
  if (keep_copies < 0 || keep_copies > 1000) {
    check.error(snapshot.at("keep_copies"), "snapshot.keep_copies",
                "expected a count 0..1000, got " + std::to_string(keep_copies));
  }
  out.keep_copies = static_cast<unsigned>(std::clamp<std::int64_t>(keep_copies, 0, 1000));
  for (auto [key, value] : keeps) {
    std::int64_t n = *value;
    snapshot.integer(key, n);
    if (n < 0 || n > 100000) {
      check.error(snapshot.at(key), snapshot.qualified(key),
                  "expected a count 0..100000, got " + std::to_string(n));
    }
    *value = static_cast<unsigned>(std::clamp<std::int64_t>(n, 0, 100000));
  }
  snapshot.rejectUnknown();
  if (!interval.empty()) {
    auto period = parseDuration(interval);
    if (!period || *period < std::chrono::seconds(1)) {
      check.error(snapshot.at("interval"), "snapshot.interval",
                  "expected a period of at least 1s (\"30m\", \"6h\"), got \"" + interval + "\"");
    } else if (tableOf(root, "snapshot").contains("schedule")) {
      check.error(snapshot.at("interval"), "snapshot.interval",
                  "set either schedule (a time of day) or interval (a period), not both");
    } else {
      out.schedule =
          intervalSchedule(std::chrono::duration_cast<std::chrono::seconds>(*period), interval);
    }
  } else if (auto parsed = parseCalendarSchedule(schedule); parsed) {
    out.schedule = std::move(*parsed);
  } else {
    check.error(snapshot.at("schedule"), "snapshot.schedule", parsed.error().message);
  }
  if (drill == "after-snapshot") {
    out.drill_each = true;
    out.drill = SnapshotSchedule{};
  } else if (auto parsed = parseCalendarSchedule(drill); parsed) {
    out.drill = std::move(*parsed);
  } else {
    check.error(snapshot.at("drill"), "snapshot.drill",
                parsed.error().message +
                    ", or \"after-snapshot\" (every snapshot, right after it "
                    "is taken)");
  }
  if (tableOf(root, "snapshot").contains("upload_command")) {
    auto parsed = parseUploadCommand(upload_command);
    if (parsed) {
      const char* path = std::getenv("PATH");
      auto program = resolveProgram(parsed->words.front(), path == nullptr ? "" : path);
      if (program)
        parsed->words.front() = *program;
      else
        parsed = fail(program.error());
    }
    if (parsed) {
      out.upload.command = std::move(*parsed);
    } else {
      check.error(snapshot.at("upload_command"), "snapshot.upload_command",
                  parsed.error().message + ", in \"" + upload_command + "\"");
    }
  }
  if (!upload_timeout.empty()) {
    auto period = parseDuration(upload_timeout);
    if (!period || *period < std::chrono::seconds(1)) {
      check.error(
          snapshot.at("upload_timeout"), "snapshot.upload_timeout",
          "expected a period of at least 1s (\"30m\", \"2h\"), got \"" + upload_timeout + "\"");
    } else {
      out.upload.timeout = std::chrono::duration_cast<std::chrono::seconds>(*period);
    }
  }
  if (!out.dir.starts_with('/')) {
    check.error(snapshot.at("dir"), "snapshot.dir",
                "expected an absolute path, got \"" + out.dir + "\"");
  }
  const auto& r = out.retention;
  if (!out.schedule.off() && r.keep_last + r.keep_hourly + r.keep_daily + r.keep_weekly == 0) {
    check.error(snapshot.at("keep_last"), "snapshot.keep_last",
                "every keep_* is 0: keep at least one snapshot (keep_last = 1), or set "
                "schedule = \"off\"");
  }
}

}  // namespace

std::string AgentConfig::where(std::string_view key) const {
  auto it = positions.find(key);
  if (it == positions.end() || it->second.line == 0) {
    return source + ": " + std::string(key) + " (not set, the default)";
  }
  return source + ":" + std::to_string(it->second.line) + ":" + std::to_string(it->second.column) +
         ": " + std::string(key);
}

Result<AgentConfig> parseAgentConfig(std::string_view text, std::string_view source,
                                     std::string_view hostname, std::string_view runtime_dir) {
  auto parsed = parseToml(text, source);
  if (!parsed) return fail(parsed.error());
  const toml::table& root = *parsed;

  AgentConfig cfg;
  cfg.source = std::string(source);
  cfg.member.name = std::string(hostname);
  cfg.agent.api_socket = std::string(runtime_dir) + "/" + std::string(kApiSocketName);
  TomlChecker check(source);
  checkSections(root, check);
  readMember(check, root, cfg.member);
  readOthers(check, root, cfg);
  readEtcd(check, root, cfg.etcd);
  readSnapshot(check, root, cfg.member, cfg.snapshot);
  readNospace(check, root, cfg.nospace);
  readDefrag(check, root, cfg.defrag);
  if (!check.ok()) return fail(Errc::kInvalidArgument, check.message());
  recordPositions(root, cfg);
  if (auto valid = validateAgentConfig(cfg); !valid) return fail(valid.error());
  return cfg;
}

std::string runtimeDirectory(const char* env) {
  if (env == nullptr) return std::string(kDefaultRuntimeDir);
  const std::string_view all(env);
  const std::string first(all.substr(0, all.find(':')));
  if (!first.starts_with('/')) return std::string(kDefaultRuntimeDir);
  return first;
}

Result<AgentConfig> loadAgentConfig(const std::string& path) {
  auto text = readFile(path);
  if (!text) return fail(text.error());
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0) std::snprintf(host, sizeof host, "%s", "etcd");
  // Only the first label: "db1.example.com" -> "db1".
  std::string name(host);
  name = name.substr(0, name.find('.'));
  // NOLINTNEXTLINE(concurrency-mt-unsafe): read once at start, before any thread.
  return parseAgentConfig(*text, path, name, runtimeDirectory(std::getenv("RUNTIME_DIRECTORY")));
}

}  // namespace etcdagent::agent
