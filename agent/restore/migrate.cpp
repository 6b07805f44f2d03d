#include "agent/restore/migrate.hpp"

#include <utility>

#include "common/file_util.hpp"
#include "etcd/snapshot/status.hpp"

namespace etcdagent::agent {
namespace {

struct Entry {
  std::int64_t main = 0;
  std::string_view key;  // the bbolt key: the revision
  std::string_view value;
};

// The key of an mvccpb.KeyValue (field 1, length-delimited), for a message; "" when unreadable.
std::string kvKey(std::string_view kv) {
  if (kv.size() < 2 || kv[0] != 0x0a) return "";
  std::size_t len = 0;
  std::size_t i = 1;
  bool whole = false;
  for (int shift = 0; i < kv.size() && shift < 35 && !whole; ++i, shift += 7) {
    const auto b = static_cast<unsigned char>(kv[i]);
    len |= std::size_t{b & 0x7fU} << shift;
    whole = (b & 0x80U) == 0;
  }
  if (!whole || len > kv.size() - i) return "";
  return std::string(kv.substr(i, len));
}

Error overwrote(const Entry& e, std::int64_t last, const std::string& how) {
  const std::string key = kvKey(e.value);
  return {Errc::kFailedPrecondition,
          "etcdctl migrate put v2 key " + (key.empty() ? std::string("(unreadable)") : key) +
              " at revision " + std::to_string(e.main) + ", " + how +
              " (the v3 store's revision was " + std::to_string(last) +
              "): etcdctl migrate writes a v2 key at its raft index, so a v2 key written after v3 "
              "history would corrupt that history. This cluster cannot be migrated by etcdctl "
              "migrate; copy its v2 keys into v3 with a client instead (a v2 read, a v3 put)"};
}

}  // namespace

std::string backendPath(const std::string& data_dir) {
  return data_dir + "/member/snap/db";
}

std::vector<std::string> migrateCommandLine(const AgentConfig& config, const std::string& aside_dir,
                                            const std::string& target_dir, bool no_ttl) {
  std::string script = R"(cp -a -- "$1" "$2" && exec "$3" migrate --data-dir "$2")";
  if (no_ttl) script += " --no-ttl";
  return {"/bin/sh",          "-c", script, "etcd-agent-migrate", aside_dir, target_dir,
          config.etcd.etcdctl};
}

Result<void> checkMigratedStore(std::string_view before_db, std::string_view after_db) {
  std::vector<Entry> before;
  auto r = etcd::forEachKeyRevision(
      before_db, [&](std::int64_t main, std::string_view key, std::string_view value) {
        before.push_back({main, key, value});
        return Result<void>{};
      });
  if (!r) return fail(r.error().context("reading the v3 store before the migration"));
  const std::int64_t last = before.empty() ? 0 : before.back().main;
  std::size_t i = 0;
  r = etcd::forEachKeyRevision(
      after_db,
      [&](std::int64_t main, std::string_view key, std::string_view value) -> Result<void> {
        const Entry e{main, key, value};
        if (i >= before.size() || key < before[i].key) {
          return fail(overwrote(e, last, "inside the v3 store's history"));
        }
        if (key != before[i].key || value != before[i].value) {
          // A v3 revision missing from `after` (key > before[i].key) cannot come from migrate.
          if (key != before[i].key) {
            return fail(Errc::kFailedPrecondition, "the migrated v3 store lost revision " +
                                                       std::to_string(before[i].main) +
                                                       " of the v3 store it was migrated from");
          }
          return fail(overwrote(e, last, "over the v3 write of " + kvKey(before[i].value)));
        }
        ++i;
        return {};
      },
      last);
  if (!r) return fail(r.error());
  if (i != before.size()) {
    return fail(Errc::kFailedPrecondition, "the migrated v3 store lost revision " +
                                               std::to_string(before[i].main) +
                                               " of the v3 store it was migrated from");
  }
  return {};
}

Result<void> checkMigratedDataDir(const std::string& before_dir, const std::string& after_dir) {
  auto before = MappedFile::open(backendPath(before_dir));
  if (!before) return fail(before.error());
  auto after = MappedFile::open(backendPath(after_dir));
  if (!after) return fail(after.error());
  return checkMigratedStore(before->bytes(), after->bytes());
}

}  // namespace etcdagent::agent
