// libFuzzer entry point: the fleet inventory (fleet.toml) from arbitrary bytes. parseInventory must
// return a value or an error naming "fleet.toml:LINE:COL", never throw or abort; what it accepts
// must render and parse back to the same members.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "fleet/inventory.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto inventory = etcdagent::fleet::parseInventory(text, "fleet.toml");
  if (!inventory) {
    if (!inventory.error().message.starts_with("fleet.toml:")) std::abort();
    return 0;
  }
  auto again = etcdagent::fleet::parseInventory(renderInventory(*inventory), "fleet.toml");
  if (!again || again->members.size() != inventory->members.size()) std::abort();
  for (std::size_t i = 0; i < inventory->members.size(); ++i) {
    if (again->members[i].name != inventory->members[i].name) std::abort();
  }
  return 0;
}
