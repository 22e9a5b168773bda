#include "daemon/data_dir.h"

#include "daemon/log.h"
#include "store/journal.h"

namespace gpupool {

Status RecoverJournal(const DataDirFiles& files) {
  Result<JournalRecovery> r = RecoverSqliteJournal(files.journal);
  if (!r.ok()) return r.error();
  if (r->damage.empty()) {
    Log("info", "--recover: the journal is intact, no record dropped",
        {{"journal", files.journal}, {"kept", std::to_string(r->kept)}, {"dropped", "0"}});
    return Ok();
  }
  std::string aside;
  for (const std::string& f : r->moved_aside) aside += (aside.empty() ? "" : " ") + f;
  Log("warn",
      "--recover: kept records 1.." + std::to_string(r->kept) + ", dropped " + std::to_string(r->dropped) +
          " record(s) after them",
      {{"journal", files.journal},
       {"damage", r->damage},
       {"kept", std::to_string(r->kept)},
       {"dropped", std::to_string(r->dropped)},
       {"moved_aside", aside}});
  return Ok();
}

Status RefuseEmptyJournalIfBootstrapped(const DataDirFiles& files) {
  for (const std::filesystem::path& held : {files.bootstrapped, files.admin_token}) {
    if (!std::filesystem::exists(held)) continue;
    return FailedPrecondition("the journal " + files.journal + " is empty or missing, but this data directory held a cluster (" +
                              held.string() + " exists): refusing to start a new cluster over it. Restore the journal "
                              "from a backup, or move the data directory away to start afresh");
  }
  return Ok();
}

Status PublishAdminToken(const DataDirFiles& files) {
  if (std::filesystem::exists(files.admin_token) || !std::filesystem::exists(files.admin_token_new)) return Ok();
  std::error_code ec;
  std::filesystem::rename(files.admin_token_new, files.admin_token, ec);
  if (ec) return Error{ErrorCode::kUnavailable, "cannot rename " + files.admin_token_new.string() + ": " + ec.message()};
  return Ok();
}

}  // namespace gpupool
