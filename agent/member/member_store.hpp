#pragma once

// What the supervisor keeps on disk for its member, behind a seam (a unit test uses a store in
// memory): <data_root>/<member>/ with state.json (the accepted plan), data/ (etcd's data dir),
// data.restore/ (a restore in progress), data.before-restore-<UTC>/ (a data dir an in-place
// restore kept aside), .lock (held by the agent, inherited by etcd), and the uploads in
// <data_root>/restore/<member>/.

#include <chrono>
#include <optional>
#include <stop_token>
#include <string>

#include "agent/config/agent_config.hpp"
#include "common/error.hpp"
#include "common/file_util.hpp"
#include "etcdagent/v1/agent.pb.h"

namespace etcdagent::agent {

class MemberStore {
 public:
  virtual ~MemberStore() = default;

  // Creates the member dir (0700) and takes its lock if it is free: false while another process
  // (an agent, or an etcd one started) holds it.
  virtual Result<bool> tryLock() = 0;
  // Waits until the lock is this process's, at most `timeout` or until `stop` is requested. Blocks:
  // the supervisor runs it on a worker thread, and nothing else touches the lock meanwhile.
  virtual Result<void> waitLock(std::chrono::milliseconds timeout, std::stop_token stop) = 0;
  [[nodiscard]] virtual std::string lockPath() const = 0;
  // The held lock, for etcd to inherit (-1 without one).
  [[nodiscard]] virtual int lockFd() const = 0;

  // state.json; nullopt when no plan was accepted.
  virtual Result<std::optional<v1::MemberState>> load() = 0;
  virtual Result<void> save(const v1::MemberState& state) = 0;

  // etcd's data dir is missing or empty.
  [[nodiscard]] virtual bool dataDirEmpty() const = 0;
  [[nodiscard]] virtual bool isFile(const std::string& path) const = 0;
  // Deletes the file; true when it existed.
  virtual bool removeFile(const std::string& path) = 0;

  // Deletes data.restore, left by an interrupted or failed restore.
  virtual Result<void> clearRestoreTemp() = 0;
  // Moves the restored data.restore into place as the data dir (mode 0700).
  virtual Result<void> installRestore() = 0;
  // fsync()s the member dir, so the rename survives a crash.
  virtual Result<void> syncMemberDir() = 0;

  // In-place restore (agent/member/in_place_restore.hpp). Moves the data dir to <member dir>/
  // `aside`; nothing when `aside` exists already or the data dir is empty.
  virtual Result<void> setDataAside(const std::string& aside) = 0;
  // Puts <member dir>/`aside` back as the data dir, and deletes the data dir it replaces (the
  // restored one); with `aside` "" (the data dir was empty) only deletes it. Nothing when `aside`
  // is gone: it was put back already, and the data dir is the one it held.
  virtual Result<void> putDataBack(const std::string& aside) = 0;

  // Deletes the data dir, state.json, the uploads and a half-done restore (never a data dir kept
  // aside by an in-place restore).
  virtual Result<void> wipe() = 0;
};

// The real one, on the paths the config names.
class DiskMemberStore final : public MemberStore {
 public:
  explicit DiskMemberStore(AgentConfig config) : config_(std::move(config)) {}

  Result<bool> tryLock() override;
  Result<void> waitLock(std::chrono::milliseconds timeout, std::stop_token stop) override;
  [[nodiscard]] std::string lockPath() const override { return config_.memberDir() + "/.lock"; }
  [[nodiscard]] int lockFd() const override { return lock_fd_.get(); }
  Result<std::optional<v1::MemberState>> load() override;
  Result<void> save(const v1::MemberState& state) override;
  [[nodiscard]] bool dataDirEmpty() const override;
  [[nodiscard]] bool isFile(const std::string& path) const override;
  bool removeFile(const std::string& path) override;
  Result<void> clearRestoreTemp() override;
  Result<void> installRestore() override;
  Result<void> syncMemberDir() override;
  Result<void> setDataAside(const std::string& aside) override;
  Result<void> putDataBack(const std::string& aside) override;
  Result<void> wipe() override;

 private:
  AgentConfig config_;
  UniqueFd lock_fd_;
};

}  // namespace etcdagent::agent
