#pragma once

// Replaces several files of one directory as one change: a key and the certificate made for it
// must never be seen from two different generations after a crash. The new files are staged in
// <dir>/<name>.pending/ under their final names; commit() renames that directory to
// <dir>/<name>.switching/ (one rename(2): the commit point, made durable before anything else
// moves), then moves each file over its namesake in <dir> and removes the empty directory.
//
// A crash before the commit point leaves every old file in place (the stage is dropped or staged
// again later); a crash after it is completed by finish(), which callers run before they read the
// files (the agent at start, etcd-fleet when it loads its PKI): then every new file is in place.
// Between the commit point and finish() the files in <dir> are mixed, so nothing may read them in
// that window: the caller that crashed is the only writer, and it finishes before it reads.
//
// Not thread-safe: one switch of a directory at a time (callers serialize).

#include <string>

#include "common/error.hpp"

namespace etcdagent {

class FileSwitch {
 public:
  // `dir` holds the files; `name` names the switch ("rotation": rotation.pending/ and
  // rotation.switching/ in `dir`), so one directory can hold several independent switches.
  FileSwitch(std::string dir, const std::string& name);

  [[nodiscard]] const std::string& dir() const { return dir_; }
  // <dir>/<name>.pending: where the new files go, named as they will be named in <dir>.
  [[nodiscard]] const std::string& stageDir() const { return stage_; }
  [[nodiscard]] std::string staged(const std::string& file) const { return stage_ + "/" + file; }

  // An empty stage (mode 0700), after removing what an earlier, uncommitted stage held.
  Result<void> freshStage() const;
  // The stage exists (something was staged and not committed).
  [[nodiscard]] bool hasStage() const;
  // Removes the stage and what it holds; nothing to remove is fine.
  Result<void> dropStage() const;

  // The commit point, then finish(). An empty or missing stage is kFailedPrecondition. Before
  // the commit point a failure changes nothing in <dir>; after it the switch is committed and a
  // failure to move a file is completed by the next finish().
  Result<void> commit() const;
  // Completes a committed switch (moves what is left, removes the directory, fsyncs): true when
  // there was one. No switch pending is false.
  Result<bool> finish() const;

 private:
  std::string dir_;
  std::string stage_;
  std::string switching_;
};

}  // namespace etcdagent
