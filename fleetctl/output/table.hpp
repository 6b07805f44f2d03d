#pragma once

// The tables etcdctl draws with olekukonko/tablewriter: header row centred, cells right-aligned,
// "+---+" borders.

#include <string>
#include <vector>

namespace etcdagent::fleet {

class Table {
 public:
  explicit Table(std::vector<std::string> header) : header_(std::move(header)) {}
  void addRow(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  [[nodiscard]] std::string render() const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

// Display width of UTF-8 text (code points; etcd's tables hold ASCII in practice).
std::size_t displayWidth(const std::string& s);

}  // namespace etcdagent::fleet
