// A program with the errors the sanitizers must catch in the children tests start (built only with
// ETCD_AGENT_SANITIZE): `faulty_child leak` leaks, `faulty_child ub` overflows an int, anything
// else exits 0 cleanly.

#include <climits>
#include <cstring>
#include <string_view>

namespace {
// Opaque to the optimizer, so the error happens at run time.
volatile int g_int_max = INT_MAX;
char* volatile g_leaked = nullptr;
}  // namespace

int main(int argc, char** argv) {
  const std::string_view what = argc > 1 ? argv[1] : "";
  if (what == "leak") {
    g_leaked = new char[64];
    std::strcpy(g_leaked, "never freed");
    g_leaked = nullptr;  // the last pointer to it is gone: a leak LeakSanitizer reports at exit
  } else if (what == "ub") {
    const int big = g_int_max;
    const volatile int sum = big + 1;  // signed overflow: UBSan ends the process here
    return sum > 0 ? 0 : 1;
  }
  return 0;
}
