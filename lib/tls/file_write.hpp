#pragma once

// How lib/tls puts key and certificate files on disk (internal to lib/tls).

#include <string>
#include <string_view>
#include <vector>

#include "common/error.hpp"

namespace etcdagent::tls {

enum class Overwrite;

// Writes `bytes` to `path` with `mode` (whatever the umask), durably. Overwrite::kYes replaces
// an existing file atomically (rename); Overwrite::kNo creates the file only if no file of that
// name exists, in one step (link(2) of a fsynced temporary), else kAlreadyExists naming `what`
// and the path ("a key already exists at /p/ca.key").
Result<void> writeSecureFile(const std::string& path, std::string_view bytes, unsigned mode,
                             Overwrite overwrite, std::string_view what);

// Removes the files it was told about unless dismissed: a step that writes several files and fails
// half-way leaves none of them behind.
class RemoveOnFailure {
 public:
  RemoveOnFailure() = default;
  RemoveOnFailure(const RemoveOnFailure&) = delete;
  RemoveOnFailure& operator=(const RemoveOnFailure&) = delete;
  ~RemoveOnFailure();
  void add(std::string path) { paths_.push_back(std::move(path)); }
  void dismiss() { paths_.clear(); }

 private:
  std::vector<std::string> paths_;
};

}  // namespace etcdagent::tls
