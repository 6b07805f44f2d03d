#include "fleetctl/output/table.hpp"

#include <algorithm>

namespace etcdagent::fleet {

std::size_t displayWidth(const std::string& s) {
  std::size_t w = 0;
  for (char c : s) {
    if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) ++w;
  }
  return w;
}

std::string Table::render() const {
  std::vector<std::size_t> width(header_.size(), 0);
  for (std::size_t i = 0; i < header_.size(); ++i) width[i] = displayWidth(header_[i]);
  for (const auto& row : rows_) {
    for (std::size_t i = 0; i < row.size() && i < width.size(); ++i)
      width[i] = std::max(width[i], displayWidth(row[i]));
  }
  std::string border = "+";
  for (auto w : width) border += std::string(w + 2, '-') + "+";
  border += "\n";

  std::string out = border + "|";
  for (std::size_t i = 0; i < header_.size(); ++i) {
    std::size_t gap = width[i] - displayWidth(header_[i]);
    std::size_t left = gap / 2;
    out += " " + std::string(left, ' ') + header_[i] + std::string(gap - left, ' ') + " |";
  }
  out += "\n" + border;
  for (const auto& row : rows_) {
    out += "|";
    for (std::size_t i = 0; i < width.size(); ++i) {
      const std::string cell = i < row.size() ? row[i] : std::string();
      out += " " + std::string(width[i] - displayWidth(cell), ' ') + cell + " |";
    }
    out += "\n";
  }
  // tablewriter closes the table even when it has no rows (header, then two borders).
  out += border;
  return out;
}

}  // namespace etcdagent::fleet
