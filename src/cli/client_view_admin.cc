// The client views of what operators and tenant admins look at: tokens, priority classes and
// the audit log (client_view.h).
#include "cli/client_view.h"
#include "cli/table.h"
#include "cli/view_util.h"

namespace gpupool::cli {

using namespace view;  // NOLINT: this file is views

void PrintTokens(const Json& items, std::ostream& out) {
  Table t({"ID", "NAME", "ROLE", "TENANT", "ACCOUNT", "EXPIRES", "LAST-USED", "REVOKED"});
  for (const Json& k : Items(items)) {
    t.Row({Str(k, "id"), Str(k, "name"), Str(k, "role"), OrNone(Str(k, "tenant")), OrNone(Str(k, "service_account")),
           Str(k, "expires").empty() ? "never" : Str(k, "expires"),
           Str(k, "last_used").empty() ? "never" : Str(k, "last_used"), Field(k, "revoked") == true ? "yes" : "no"});
  }
  t.Print(out);
}

void PrintPriorityClasses(const Json& items, std::ostream& out) {
  Table t({"NAME", "VALUE", "PREEMPTIBLE", "MAY-BORROW", "GRACE"});
  for (const Json& c : Items(items)) {
    const Json& grace = Field(c, "grace_period_s");
    t.Row({Str(c, "name"), Str(c, "value"), Field(c, "preemptible") == true ? "yes" : "no",
           Field(c, "may_borrow") == true ? "yes" : "no",
           grace.is_number() ? CompactDuration(grace.get<int64_t>(), 2) : ""});
  }
  t.Print(out);
}

void PrintAudit(const Json& items, std::ostream& out) {
  Table t({"ID", "TIME", "PRINCIPAL", "TENANT", "ACTION", "OBJECT", "FROM"});
  for (const Json& e : Items(items)) {
    const Json& at = Field(e, "at_ms");
    t.Row({Str(e, "id"), at.is_number() ? IsoTime(at.get<int64_t>()) : "", Str(e, "principal"),
           OrNone(Str(e, "tenant")), Str(e, "action"), Str(e, "object"), Str(e, "remote")});
  }
  t.Print(out);
}

}  // namespace gpupool::cli
