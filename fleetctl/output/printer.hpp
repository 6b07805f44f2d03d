#pragma once

// A printer is one table: for each -w format it supports, the function that prints it. The
// commands derive their -w check from the same table (requireFormat(ctx, printer), commands/
// util.hpp), so a format is accepted exactly when something prints it; a format a printer lacks
// has no entry, rather than a `case` that silently prints nothing.
//
//   constinit const Printer<const etcdserverpb::PutResponse&> printPut{{
//       .simple = putSimple, .json = printJson<etcdserverpb::PutResponse>, .fields = putFields}};
//   printPut(ctx.output(), response);

#include <ostream>

#include "fleetctl/output/format.hpp"

namespace etcdagent::fleet {

// The form of a format in which etcdctl prints nothing on purpose, which is not the same as a
// format it refuses: `lease keep-alive` says that a lease expired in simple output only.
template <class... Args>
void printNothing(const Output&, Args...) {}

template <class... Args>
class Printer {
 public:
  using Form = void (*)(const Output&, Args...);
  struct Forms {
    Form simple = nullptr;
    Form json = nullptr;
    Form table = nullptr;
    Form fields = nullptr;
  };

  constexpr explicit Printer(Forms forms) : forms_(forms) {}

  // A printer with the formats of `other` (which it prints through), each printed by `form`:
  // `user get --detail` prints in the formats of the role printer it calls.
  template <class... Other>
  static constexpr Printer like(const Printer<Other...>& other, Form form) {
    Forms forms;
    if (other.supports(OutputFormat::kSimple)) forms.simple = form;
    if (other.supports(OutputFormat::kJson)) forms.json = form;
    if (other.supports(OutputFormat::kTable)) forms.table = form;
    if (other.supports(OutputFormat::kFields)) forms.fields = form;
    return Printer(forms);
  }

  [[nodiscard]] constexpr Form form(OutputFormat f) const {
    switch (f) {
      case OutputFormat::kSimple: return forms_.simple;
      case OutputFormat::kJson: return forms_.json;
      case OutputFormat::kTable: return forms_.table;
      case OutputFormat::kFields: return forms_.fields;
    }
    return nullptr;
  }
  [[nodiscard]] constexpr bool supports(OutputFormat f) const { return form(f) != nullptr; }

  // Prints in o.format. Commands check the format first; should one forget, etcdctl's refusal
  // goes to stderr instead of nothing at all.
  void operator()(const Output& o, Args... args) const {
    if (const Form f = form(o.format)) {
      f(o, args...);
    } else {
      o.err << unsupportedFormat(o.format) << "\n";
    }
  }

 private:
  Forms forms_;
};

}  // namespace etcdagent::fleet
