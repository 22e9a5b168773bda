// Journal integrity (docs/design/daemon.md, "Journal integrity"): checksums, sequence gaps, the
// high-water mark and its slots, old journals without checksums, and --recover.
#include <fcntl.h>
#include <sqlite3.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "store/crc32c.h"
#include "store/high_water_mark.h"
#include "store/journal.h"

namespace gpupool {
namespace {

namespace fs = std::filesystem;

std::string TempDir() {
  const fs::path dir = fs::temp_directory_path() / ("gpupool-integrity-" + std::to_string(std::random_device{}()));
  fs::create_directories(dir);
  return dir.string();
}

// Appends `n` one-record batches "k1".."kN" to the journal at `path`.
void Fill(const std::string& path, int n) {
  Result<std::unique_ptr<Journal>> j = OpenSqliteJournal(path);
  ASSERT_TRUE(j.ok()) << j.error().message;
  for (int i = 1; i <= n; ++i) {
    std::vector<Record> batch = {{0, "k" + std::to_string(i), "{\"i\":" + std::to_string(i) + "}"}};
    ASSERT_TRUE((*j)->Append(batch).ok());
  }
}

// Runs SQL on the file behind the journal's back (what damage or an old version would do).
void Sql(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* msg = nullptr;
  EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &msg), SQLITE_OK) << (msg ? msg : "");
  sqlite3_free(msg);
  sqlite3_close(db);
}

std::string OpenError(const std::string& path) {
  Result<std::unique_ptr<Journal>> j = OpenSqliteJournal(path);
  return j.ok() ? "" : j.error().message;
}

TEST(Crc32c, MatchesTheStandardCheckValues) {
  EXPECT_EQ(Crc32c("123456789"), 0xE3069283u);                    // the CRC catalogue's check value
  EXPECT_EQ(Crc32c(std::string(32, '\0')), 0x8A9136AAu);         // RFC 3720, B.4: 32 zero bytes
  EXPECT_EQ(Crc32c("56789", Crc32c("1234")), Crc32c("123456789"));  // continued
}

TEST(Crc32c, EightBytesAtATimeEqualsOneByteAtATime) {
  // Each one-byte call runs only the byte loop; a whole string runs the eight-byte one too.
  std::mt19937 rng(5);
  for (size_t n = 0; n <= 70; ++n) {
    std::string s(n, '\0');
    for (char& ch : s) ch = static_cast<char>(rng());
    uint32_t bytewise = 0;
    for (const char ch : s) bytewise = Crc32c(std::string_view(&ch, 1), bytewise);
    EXPECT_EQ(Crc32c(s), bytewise) << n << " bytes";
  }
}

TEST(JournalIntegrity, ABodyChangedBehindTheJournalsBackFailsItsChecksum) {
  const std::string path = TempDir() + "/journal.db";
  Fill(path, 3);
  Sql(path, "UPDATE journal SET body = '{\"i\":9}' WHERE seq = 2");
  const std::string e = OpenError(path);
  EXPECT_NE(e.find("record 2 fails its checksum"), std::string::npos) << e;
  EXPECT_NE(e.find(path), std::string::npos) << "names the file: " << e;
  EXPECT_NE(e.find("--recover` to keep records 1..1 and drop the rest"), std::string::npos) << e;
}

TEST(JournalIntegrity, ARecordMovedToAnotherSeqFailsItsChecksum) {
  // Record 3's row, checksum and all, becomes record 4: the checksum covers the seq too.
  const std::string path = TempDir() + "/journal.db";
  Fill(path, 3);
  Sql(path, "UPDATE journal SET seq = 4 WHERE seq = 3; INSERT INTO journal SELECT 3, kind, body, crc FROM journal WHERE seq = 2");
  EXPECT_NE(OpenError(path).find("record 3 fails its checksum"), std::string::npos) << OpenError(path);
}

TEST(JournalIntegrity, AGapInTheSequenceIsDamage) {
  const std::string path = TempDir() + "/journal.db";
  Fill(path, 5);
  Sql(path, "DELETE FROM journal WHERE seq IN (2, 3)");
  const std::string e = OpenError(path);
  EXPECT_NE(e.find("the records jump from 1 to 4: record 2..3 missing"), std::string::npos) << e;
  Sql(path, "DELETE FROM journal WHERE seq = 1");
  EXPECT_NE(OpenError(path).find("the first record is 4, not 1"), std::string::npos) << OpenError(path);
}

TEST(JournalIntegrity, ALostTailIsCaughtByTheHighWaterMark) {
  // Records 4 and 5 vanish as a deleted WAL would take them: the rows are gone, every checksum
  // left is right, the sequence has no gap. Only the mark knows 5 were acknowledged.
  const std::string dir = TempDir();
  Fill(dir + "/journal.db", 5);
  Result<std::optional<int64_t>> mark = HighWaterMark::Read(dir + "/journal.hwm");
  ASSERT_TRUE(mark.ok() && *mark);
  EXPECT_EQ(**mark, 5);
  Sql(dir + "/journal.db", "DELETE FROM journal WHERE seq > 3");
  const std::string e = OpenError(dir + "/journal.db");
  EXPECT_NE(e.find("ends at record 3, but its high-water mark " + dir + "/journal.hwm says 5 records were "
                   "acknowledged: records 4..5 are missing"),
            std::string::npos)
      << e;
  // The whole journal gone: refused, and no new empty journal is created in its place.
  for (const char* f : {"/journal.db", "/journal.db-wal", "/journal.db-shm"}) fs::remove(dir + f);
  EXPECT_NE(OpenError(dir + "/journal.db").find("is missing or has no records"), std::string::npos);
  EXPECT_FALSE(fs::exists(dir + "/journal.db"));
}

TEST(JournalIntegrity, AMissingMarkIsRefusedOnceTheJournalWasWrittenWithOne) {
  const std::string dir = TempDir();
  Fill(dir + "/journal.db", 2);
  fs::remove(dir + "/journal.hwm");
  EXPECT_NE(OpenError(dir + "/journal.db").find("journal.hwm is missing"), std::string::npos)
      << OpenError(dir + "/journal.db");
}

TEST(JournalIntegrity, AnOldJournalWithoutChecksumsOpensAndGainsThem) {
  // The schema before checksums, as the daemon wrote it: no crc column, no mark.
  const std::string dir = TempDir();
  const std::string path = dir + "/journal.db";
  Sql(path, "PRAGMA journal_mode=WAL; CREATE TABLE journal (seq INTEGER PRIMARY KEY, kind TEXT NOT NULL, body TEXT NOT NULL);"
            "INSERT INTO journal VALUES (1, 'a', '{}'), (2, 'b', '{\"x\":1}')");
  {
    Result<std::unique_ptr<Journal>> j = OpenSqliteJournal(path);
    ASSERT_TRUE(j.ok()) << j.error().message;
    Result<std::vector<Record>> all = (*j)->ReadAll();
    ASSERT_TRUE(all.ok());
    ASSERT_EQ(all->size(), 2u);
    EXPECT_EQ((*all)[1].body, "{\"x\":1}");
    std::vector<Record> more = {{0, "c", "{}"}};
    ASSERT_TRUE((*j)->Append(more).ok());
    EXPECT_EQ(more[0].seq, 3);
  }
  Result<std::vector<Record>> all = (*OpenSqliteJournal(path))->ReadAll();
  ASSERT_TRUE(all.ok()) << all.error().message;
  EXPECT_EQ(all->size(), 3u);
  EXPECT_EQ(**HighWaterMark::Read(dir + "/journal.hwm"), 3);
  // Record 3 has a checksum now; the old ones are taken as they are (their damage is not seen here).
  Sql(path, "UPDATE journal SET body = '{\"x\":2}' WHERE seq = 2");
  EXPECT_EQ(OpenError(path), "");
  Sql(path, "UPDATE journal SET body = '{\"y\":1}' WHERE seq = 3");
  EXPECT_NE(OpenError(path).find("record 3 fails its checksum"), std::string::npos);
  // A record without a checksum after one with is damage, not an old record.
  Sql(path, "UPDATE journal SET body = '{}' WHERE seq = 3; INSERT INTO journal VALUES (4, 'd', '{}', NULL)");
  EXPECT_NE(OpenError(path).find("record 4 has no checksum, but the records before it have one"), std::string::npos)
      << OpenError(path);
}

void Damage(const std::string& path, off_t offset, const char* bytes, size_t n) {
  const int fd = ::open(path.c_str(), O_WRONLY);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::pwrite(fd, bytes, n, offset), static_cast<ssize_t>(n));
  ::close(fd);
}

TEST(HighWaterMark, AlternatesSlotsSoATornWriteLeavesThePreviousValue) {
  const std::string path = TempDir() + "/j.hwm";
  EXPECT_FALSE(*HighWaterMark::Read(path)) << "no file: no mark";
  {
    Result<std::unique_ptr<HighWaterMark>> m = HighWaterMark::Open(path, 0);
    ASSERT_TRUE(m.ok()) << m.error().message;
    ASSERT_TRUE((*m)->Write(10).ok());  // Reset wrote slots 0 and 1 (generation 1, 2): this is slot 0
    ASSERT_TRUE((*m)->Write(11).ok());  // slot 1
  }
  EXPECT_EQ(**HighWaterMark::Read(path), 11);
  EXPECT_EQ(fs::file_size(path), static_cast<uintmax_t>(HighWaterMark::kFileBytes)) << "writes never grow it";
  Damage(path, HighWaterMark::kSlotStride + 12, "\xff", 1);  // a write of 11 torn in its seq
  EXPECT_EQ(**HighWaterMark::Read(path), 10);
  {  // the next write goes to the damaged slot, not over 10
    Result<std::unique_ptr<HighWaterMark>> m = HighWaterMark::Open(path, 0);
    ASSERT_TRUE(m.ok());
    ASSERT_TRUE((*m)->Write(12).ok());
  }
  EXPECT_EQ(**HighWaterMark::Read(path), 12);
  Damage(path, 3, "\xff", 1);  // now slot 0 (10) loses its magic too: 12 in slot 1 still stands
  EXPECT_EQ(**HighWaterMark::Read(path), 12);
  Damage(path, HighWaterMark::kSlotStride + 26, "\x01", 1);  // and slot 1 its checksum: nothing valid
  Result<std::optional<int64_t>> none = HighWaterMark::Read(path);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message.find("slot 0: no magic, slot 1: checksum mismatch"), std::string::npos)
      << none.error().message;
  ASSERT_EQ(::truncate(path.c_str(), 100), 0);
  EXPECT_NE(HighWaterMark::Read(path).error().message.find("slot 1: cut short"), std::string::npos);
}

TEST(HighWaterMark, AResetMayLowerTheMarkForGood) {
  // The newest generation wins, not the highest seq: after a recovery to 7, the old 20 in the
  // other slot must not come back.
  const std::string path = TempDir() + "/j.hwm";
  {
    Result<std::unique_ptr<HighWaterMark>> m = HighWaterMark::Open(path, 0);
    ASSERT_TRUE((*m)->Write(20).ok());
  }
  ASSERT_TRUE(HighWaterMark::Reset(path, 7).ok());
  Result<std::unique_ptr<HighWaterMark>> m = HighWaterMark::Open(path, 0);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ((*m)->seq(), 7);
  ASSERT_TRUE((*m)->Write(8).ok());
  EXPECT_EQ(**HighWaterMark::Read(path), 8);
}

TEST(JournalRecovery, KeepsTheIntactRecordsMovesTheRestAsideAndResetsTheMark) {
  const std::string dir = TempDir();
  const std::string path = dir + "/journal.db";
  Fill(path, 6);
  Sql(path, "UPDATE journal SET body = 'garbage' WHERE seq = 4");
  ASSERT_NE(OpenError(path), "");
  Result<JournalRecovery> r = RecoverSqliteJournal(path);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->kept, 3);
  EXPECT_EQ(r->dropped, 3) << "4 is damaged; 5 and 6 are readable but follow it";
  EXPECT_NE(r->damage.find("record 4 fails its checksum"), std::string::npos) << r->damage;
  EXPECT_TRUE(fs::exists(dir + "/journal.db.damaged-1")) << "the old journal is kept, renamed";
  EXPECT_TRUE(fs::exists(dir + "/journal.hwm.damaged-1"));
  Result<std::unique_ptr<Journal>> j = OpenSqliteJournal(path);
  ASSERT_TRUE(j.ok()) << j.error().message;
  Result<std::vector<Record>> all = (*j)->ReadAll();
  ASSERT_EQ(all->size(), 3u);
  EXPECT_EQ((*all)[2].kind, "k3");
  std::vector<Record> more = {{0, "again", "{}"}};
  ASSERT_TRUE((*j)->Append(more).ok());
  EXPECT_EQ(more[0].seq, 4) << "numbering goes on from the last kept record";
  // Nothing wrong any more: a second recovery changes nothing.
  j->reset();
  Result<JournalRecovery> again = RecoverSqliteJournal(path);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->damage, "");
  EXPECT_EQ(again->kept, 4);
  EXPECT_FALSE(fs::exists(dir + "/journal.db.damaged-2"));
}

TEST(JournalRecovery, ALostTailCountsTheAcknowledgedRecords) {
  const std::string dir = TempDir();
  Fill(dir + "/journal.db", 5);
  Sql(dir + "/journal.db", "DELETE FROM journal WHERE seq > 2");
  Result<JournalRecovery> r = RecoverSqliteJournal(dir + "/journal.db");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->kept, 2);
  EXPECT_EQ(r->dropped, 3) << "records 3..5 were acknowledged";
  EXPECT_EQ(OpenError(dir + "/journal.db"), "");
  // A damaged or missing mark alone: the journal stays, a new mark is written, nothing dropped.
  fs::remove(dir + "/journal.hwm");
  ASSERT_NE(OpenError(dir + "/journal.db"), "");
  r = RecoverSqliteJournal(dir + "/journal.db");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->kept, 2);
  EXPECT_EQ(r->dropped, 0);
  EXPECT_TRUE(r->moved_aside.empty());
  EXPECT_EQ(OpenError(dir + "/journal.db"), "");
}

TEST(JournalRecovery, NothingIntactIsRefused) {
  const std::string dir = TempDir();
  Fill(dir + "/journal.db", 2);
  for (const char* f : {"/journal.db", "/journal.db-wal", "/journal.db-shm"}) fs::remove(dir + f);
  Result<JournalRecovery> r = RecoverSqliteJournal(dir + "/journal.db");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("no intact record"), std::string::npos) << r.error().message;
  EXPECT_TRUE(fs::exists(dir + "/journal.hwm")) << "a refused recovery changes nothing";
}

}  // namespace
}  // namespace gpupool
