#pragma once

// A private directory under /tmp for one unit test, removed with everything in it at the end.

#include <stdlib.h>

#include <filesystem>
#include <stdexcept>
#include <string>

namespace etcdagent::testing {

class UnitTempDir {
 public:
  UnitTempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "etcd-agent-unit-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp " + tmpl);
    path_ = tmpl;
  }
  ~UnitTempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  UnitTempDir(const UnitTempDir&) = delete;
  UnitTempDir& operator=(const UnitTempDir&) = delete;

  [[nodiscard]] const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace etcdagent::testing
