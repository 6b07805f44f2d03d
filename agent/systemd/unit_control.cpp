#include "agent/systemd/unit_control.hpp"

#include <systemd/sd-bus.h>
#include <systemd/sd-login.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace etcdagent::agent {
namespace {

constexpr const char* kDest = "org.freedesktop.systemd1";
constexpr const char* kPath = "/org/freedesktop/systemd1";
constexpr const char* kManager = "org.freedesktop.systemd1.Manager";

struct BusDeleter {
  void operator()(sd_bus* b) const { sd_bus_flush_close_unref(b); }
};
struct MessageDeleter {
  void operator()(sd_bus_message* m) const { sd_bus_message_unref(m); }
};
using Bus = std::unique_ptr<sd_bus, BusDeleter>;
using Message = std::unique_ptr<sd_bus_message, MessageDeleter>;

// An sd_bus_error that frees itself.
struct BusError {
  sd_bus_error e{};  // SD_BUS_ERROR_NULL, which is a C compound literal
  ~BusError() { sd_bus_error_free(&e); }
  std::string text(int r) const {
    return e.message != nullptr ? std::string(e.message) : std::string(std::strerror(-r));
  }
};

Result<Bus> openBus(bool user) {
  sd_bus* raw = nullptr;
  int r = user ? sd_bus_open_user(&raw) : sd_bus_open_system(&raw);
  if (r < 0) {
    return fail(Errc::kUnavailable, std::string("cannot connect to the ") +
                                        (user ? "user" : "system") + " bus: " + std::strerror(-r));
  }
  return Bus(raw);
}

}  // namespace

namespace {

// Asks the manager on `bus` which unit this process belongs to (GetUnitByPID, then the unit's Id).
std::string unitByPid(bool user) {
  auto bus = openBus(user);
  if (!bus) return {};
  BusError error;
  sd_bus_message* reply = nullptr;
  int r = sd_bus_call_method(bus->get(), kDest, kPath, kManager, "GetUnitByPID", &error.e, &reply,
                             "u", static_cast<std::uint32_t>(getpid()));
  Message owned(reply);
  if (r < 0) return {};
  const char* path = nullptr;
  if (sd_bus_message_read(reply, "o", &path) < 0 || path == nullptr) return {};
  char* id = nullptr;
  BusError prop_error;
  if (sd_bus_get_property_string(bus->get(), kDest, path, "org.freedesktop.systemd1.Unit", "Id",
                                 &prop_error.e, &id) < 0) {
    return {};
  }
  std::string out = id;
  std::free(id);
  return out;
}

}  // namespace

UnitControl UnitControl::forThisProcess() {
  UnitControl u;
  // systemd sets $INVOCATION_ID for every unit it starts: without it we are not a service.
  if (std::getenv("INVOCATION_ID") == nullptr) return u;
  // A user manager's units may live in a cgroup that sd_pid_get_user_unit() does not recognise
  // (a manager started outside user@.service), so ask the managers themselves, user bus first.
  if (std::getenv("DBUS_SESSION_BUS_ADDRESS") != nullptr ||
      std::getenv("XDG_RUNTIME_DIR") != nullptr) {
    u.unit_ = unitByPid(true);
    if (!u.unit_.empty()) {
      u.user_ = true;
      return u;
    }
  }
  u.unit_ = unitByPid(false);
  if (!u.unit_.empty()) return u;
  char* unit = nullptr;
  if (sd_pid_get_unit(0, &unit) >= 0 && unit != nullptr) u.unit_ = unit;
  std::free(unit);
  return u;
}

Result<std::string> UnitControl::unitFileState() const {
  if (unit_.empty()) return fail(Errc::kFailedPrecondition, "not running as a systemd unit");
  auto bus = openBus(user_);
  if (!bus) return fail(bus.error());
  BusError error;
  sd_bus_message* reply = nullptr;
  int r = sd_bus_call_method(bus->get(), kDest, kPath, kManager, "GetUnitFileState", &error.e,
                             &reply, "s", unit_.c_str());
  Message owned(reply);
  if (r < 0) return fail(Errc::kInternal, "GetUnitFileState(" + unit_ + "): " + error.text(r));
  const char* state = nullptr;
  r = sd_bus_message_read(reply, "s", &state);
  if (r < 0 || state == nullptr) return fail(Errc::kInternal, "GetUnitFileState: bad reply");
  return std::string(state);
}

Result<void> UnitControl::setEnabled(bool enabled) const {
  if (unit_.empty()) {
    return fail(Errc::kFailedPrecondition,
                "etcd-agent is not running as a systemd unit, so there is no unit to enable");
  }
  auto bus = openBus(user_);
  if (!bus) return fail(bus.error());
  BusError error;
  sd_bus_message* request = nullptr;
  const char* method = enabled ? "EnableUnitFiles" : "DisableUnitFiles";
  int r = sd_bus_message_new_method_call(bus->get(), &request, kDest, kPath, kManager, method);
  Message owned_request(request);
  std::string unit = unit_;
  char* files[] = {unit.data(), nullptr};
  if (r >= 0) r = sd_bus_message_append_strv(request, files);
  if (r >= 0)
    r = enabled ? sd_bus_message_append(request, "bb", 0, 1)
                : sd_bus_message_append(request, "b", 0);
  if (r < 0)
    return fail(Errc::kInternal, std::string("cannot build ") + method + ": " + std::strerror(-r));
  sd_bus_message* reply = nullptr;
  r = sd_bus_call(bus->get(), request, 0, &error.e, &reply);
  Message owned_reply(reply);
  if (r < 0)
    return fail(Errc::kPermissionDenied, std::string(method) + "(" + unit_ + "): " + error.text(r));
  BusError reload_error;
  r = sd_bus_call_method(bus->get(), kDest, kPath, kManager, "Reload", &reload_error.e, nullptr,
                         "");
  if (r < 0)
    return fail(Errc::kInternal,
                "Reload after " + std::string(method) + ": " + reload_error.text(r));
  return {};
}

}  // namespace etcdagent::agent
