#pragma once

// A MemberStore in memory: the test sets what is "on disk" and reads what the supervisor did.

#include <optional>
#include <set>
#include <string>

#include "agent/member/member_store.hpp"

namespace etcdagent::testing {

class MemoryMemberStore final : public agent::MemberStore {
 public:
  std::optional<v1::MemberState> state;  // state.json
  bool data_empty = true;                // etcd's data dir
  bool restore_temp = false;             // data.restore, as etcdctl leaves it
  std::set<std::string> files;           // uploaded snapshots
  bool lock_free = true;                 // tryLock() takes it at once
  bool free_after_wait = true;           // waitLock() gets it
  int saves = 0;
  int wipes = 0;
  std::optional<Error> fail_wipe;
  std::optional<Error> fail_install;

  Result<bool> tryLock() override { return lock_free; }
  Result<void> waitLock(std::chrono::milliseconds, std::stop_token) override {
    if (free_after_wait) return {};
    return fail(Errc::kFailedPrecondition, lockPath() + " is held by another process");
  }
  [[nodiscard]] std::string lockPath() const override { return "/nonexistent/m1/.lock"; }
  [[nodiscard]] int lockFd() const override { return 99; }
  Result<std::optional<v1::MemberState>> load() override { return state; }
  Result<void> save(const v1::MemberState& s) override {
    state = s;
    ++saves;
    return {};
  }
  [[nodiscard]] bool dataDirEmpty() const override { return data_empty; }
  [[nodiscard]] bool isFile(const std::string& path) const override { return files.contains(path); }
  bool removeFile(const std::string& path) override { return files.erase(path) > 0; }
  Result<void> clearRestoreTemp() override {
    restore_temp = false;
    return {};
  }
  Result<void> installRestore() override {
    if (fail_install) return fail(*fail_install);
    restore_temp = false;
    data_empty = false;
    return {};
  }
  Result<void> syncMemberDir() override { return {}; }
  // In-place restore: the data dirs kept aside, by name (true: it held data).
  std::set<std::string> aside;
  std::optional<Error> fail_move;
  Result<void> setDataAside(const std::string& name) override {
    if (fail_move) return fail(*fail_move);
    if (name.empty() || aside.contains(name) || data_empty) return {};
    aside.insert(name);
    data_empty = true;
    return {};
  }
  Result<void> putDataBack(const std::string& name) override {
    if (fail_move) return fail(*fail_move);
    if (name.empty()) {
      data_empty = true;
      return {};
    }
    if (!aside.contains(name)) return {};
    aside.erase(name);
    data_empty = false;
    return {};
  }
  Result<void> wipe() override {
    if (fail_wipe) return fail(*fail_wipe);
    ++wipes;
    state.reset();
    data_empty = true;
    restore_temp = false;
    files.clear();
    return {};
  }
};

}  // namespace etcdagent::testing
