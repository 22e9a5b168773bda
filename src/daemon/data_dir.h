// The files of a data directory that the journal does not hold, and the rules that tie them to
// it (docs/design/daemon.md, "Journal integrity"):
//   journal.db, journal.db-wal, journal.hwm  the journal and its high-water mark (store/journal.h)
//   admin.token                              the bootstrap admin's secret; the cluster exists
//   admin.token.new                          the same, before the bootstrap's journal is durable
//   bootstrapped                             written once the bootstrap's journal is durable
// A directory with admin.token or bootstrapped held a cluster: an empty journal there is damage,
// never a new cluster. admin.token.new without admin.token is a bootstrap that crashed before
// its journal was durable, safe to do again.
//
// Thread-safety: none; Serve calls these once, before anything else runs.
#pragma once

#include <filesystem>
#include <string>

#include "core/result.h"
#include "store/store_url.h"

namespace gpupool {

struct DataDirFiles {
  explicit DataDirFiles(const std::filesystem::path& dir)
      : journal((dir / "journal.db").string()), admin_token(dir / "admin.token"),
        admin_token_new(dir / "admin.token.new"), bootstrapped(dir / "bootstrapped") {}
  std::string journal;
  std::filesystem::path admin_token, admin_token_new, bootstrapped;
};

// The data directory's files with the journal where the store URL puts it (sqlite:DIR: in DIR).
inline DataDirFiles StoreFiles(const std::filesystem::path& dir, const StoreUrl& store) {
  DataDirFiles f(dir);
  if (store.kind == StoreUrl::Kind::kSqlite && !store.sqlite_dir.empty()) {
    f.journal = (std::filesystem::path(store.sqlite_dir) / "journal.db").string();
  }
  return f;
}

// `gpupool serve --recover`: RecoverSqliteJournal on the journal, logging what was kept, dropped
// and moved aside.
Status RecoverJournal(const DataDirFiles& files);

// For an empty journal: an error if the directory held a cluster (admin.token or bootstrapped).
Status RefuseEmptyJournalIfBootstrapped(const DataDirFiles& files);

// After the bootstrap's flush: admin.token.new becomes admin.token. On a later start with a
// non-empty journal it does the same, if a crash came between the flush and the rename.
Status PublishAdminToken(const DataDirFiles& files);

}  // namespace gpupool
