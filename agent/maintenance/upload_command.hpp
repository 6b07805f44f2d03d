#pragma once

// [snapshot] upload_command: the operator's command that keeps a copy of each new verified
// snapshot off the host, as a template:
//
//   upload_command = "rclone copyto {file} backup:etcd/{cluster}/{name}"
//
// Split into words as a POSIX shell would split it (blanks; '...' taken literally; "..." and a
// backslash escaping the next character), then run directly, without a shell, so nothing in a
// file name is ever interpreted. Placeholders, replaced inside each word:
//
//   {file}     the snapshot's absolute path        {name}     its file name
//   (m1-20261204T020000Z.db) {member}   the member it was taken from        {cluster}  the cluster
//   token {sha256}   the file's sha256 (hex)
//
// Pure: parsed when agent.toml is read, expanded for each snapshot.

#include <string>
#include <string_view>
#include <vector>

#include "common/error.hpp"
#include "etcdagent/v1/agent.pb.h"

namespace etcdagent::agent {

struct UploadCommand {
  std::string text;                // as configured
  std::vector<std::string> words;  // split, placeholders still in them
  bool operator==(const UploadCommand&) const = default;
};

// Fails with what is wrong: no program, an unterminated quote, an unknown {placeholder}, a
// template that never names the snapshot ({file}).
Result<UploadCommand> parseUploadCommand(std::string_view text);

// The program's absolute path: `program` itself when it has a '/', else the first executable
// file of that name in `search_path` (PATH's form; the default PATH of systemd's services when
// empty). Fails saying where it looked.
Result<std::string> resolveProgram(const std::string& program, std::string_view search_path);

// The command line for the snapshot at `path` (its record names it, its member, its cluster).
std::vector<std::string> expandUploadCommand(const UploadCommand& command, const std::string& path,
                                             const v1::SnapshotRecord& record);

}  // namespace etcdagent::agent
