// Nsight Systems SQLite export (`nsys export --type sqlite`) -> normalized Trace.
//
// The export is a relational database whose schema changes between nsys versions, so the
// importer reads the schema first (sqlite_master, PRAGMA table_info) and builds each
// SELECT from the columns that exist; an absent table or column is counted and its data
// defaulted, never fatal. Rows are streamed through prepared statements, one table at a
// time, and the event columns are reserved once from COUNT(*) of every table read.
// Strings live in StringIds (id -> text); they are loaded once into a vector indexed by id
// and interned into the trace's pool only when an event uses them, so the many callchain
// symbols of an export never reach the pool.
//
// Facts about the export this code relies on (checked on nsys 2022.2 and 2024.5 exports,
// see docs/ingest-nsys.md):
//   - globalTid = (vm << 48) | (pid << 24) | tid and globalPid = the same with tid 0;
//     PROCESSES.pid equals (globalPid >> 24) & 0xFFFFFF on every row of both real files,
//     and TARGET_INFO_SYSTEM_ENV.globalVid / TARGET_INFO_GPU.vmId are vm << 48.
//   - Timestamps are ns since the session start; TARGET_INFO_SESSION_START_TIME.utcEpochNs
//     is the UTC time of timestamp 0.
//   - CUPTI_ACTIVITY_KIND_RUNTIME holds runtime calls (eventClass CUDA_RUNTIME), driver
//     calls (CUDA_DRIVER) and, when backtraces were collected, one extra CUDABACKTRACE row
//     per call that encloses it with the same correlationId; the latter are duplicates
//     of the call and are skipped.
//   - NVTX push/pop ranges are stored complete (start and end on one row); the domain
//     name comes from the NvtxDomainCreate row with the same domainId.
#include "src/ingest/nsys_importer.h"

#include <sqlite3.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "src/ingest/signature.h"
#include "teller/core/progress.h"
#include "teller/ingest/ingest.h"

namespace teller::ingest {
namespace {

// Global id layout (see the file comment).
constexpr uint64_t kIdMask = 0xFFFFFF;
inline uint64_t PidKey(int64_t global_id) { return static_cast<uint64_t>(global_id) >> 24; }
inline int64_t PidOfKey(uint64_t key) { return static_cast<int64_t>(key & kIdMask); }
inline uint64_t VmOfKey(uint64_t key) { return key >> 24; }
inline uint32_t TidOf(int64_t global_id) {
  return static_cast<uint32_t>(static_cast<uint64_t>(global_id) & kIdMask);
}

// Fallback codes for exports without the ENUM_* tables (nsys 2022.2 has none of them).
// Values are those of ENUM_NSYS_EVENT_TYPE / ENUM_NSYS_EVENT_CLASS in nsys 2024.5.
constexpr int64_t kFallbackNvtxMark = 34;
constexpr int64_t kFallbackNvtxPushRange = 35;
constexpr int64_t kFallbackNvtxPopRange = 36;
constexpr int64_t kFallbackNvtxPushPopRange = 59;
constexpr int64_t kFallbackNvtxStartEndRange = 60;
constexpr int64_t kFallbackNvtxtMark = 65;
constexpr int64_t kFallbackNvtxtPushPopRange = 70;
constexpr int64_t kFallbackNvtxtStartEndRange = 71;
constexpr int64_t kFallbackNvtxDomainCreate = 75;
constexpr int64_t kFallbackClassRuntime = 0;
constexpr int64_t kFallbackClassDriver = 1;
constexpr int64_t kFallbackClassBacktrace = 67;

// CUpti_ActivityMemcpyKind and CUpti_ActivitySynchronizationType labels, as nsys prints
// them in ENUM_CUDA_MEMCPY_OPER / ENUM_CUPTI_SYNC_TYPE, for exports without those tables.
constexpr std::string_view kFallbackMemcpyLabels[] = {
    "Unknown",          "Host-to-Device", "Device-to-Host",  "Host-to-Array",
    "Array-to-Host",    "Array-to-Array", "Array-to-Device", "Device-to-Array",
    "Device-to-Device", "Host-to-Host",   "Peer-to-Peer"};
constexpr std::string_view kFallbackSyncLabels[] = {"Unknown", "Event sync", "Stream wait sync",
                                                    "Stream sync", "Context sync"};

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string Basename(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// Percent-encodes what a SQLite URI filename treats specially.
std::string UriPath(const std::string& path) {
  std::string out;
  out.reserve(path.size() + 8);
  static constexpr char kHex[] = "0123456789ABCDEF";
  for (unsigned char c : path) {
    if (c == '%' || c == '?' || c == '#' || c < 0x20 || c >= 0x7f) {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

std::string Quote(std::string_view ident) {
  std::string out = "\"";
  for (char c : ident) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
  return out;
}

// Owns one prepared statement; finalized on destruction.
class Statement {
 public:
  explicit Statement(sqlite3* db) : db_(db) {}
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  int Prepare(const std::string& sql) {
    return sqlite3_prepare_v2(db_, sql.c_str(), static_cast<int>(sql.size()), &stmt_, nullptr);
  }
  // `text` must outlive the statement's use of it (bound without a copy).
  int BindText(int index, std::string_view text) {
    return sqlite3_bind_text(stmt_, index, text.data(), static_cast<int>(text.size()),
                             SQLITE_STATIC);
  }
  int Step() { return sqlite3_step(stmt_); }
  int Type(int col) const { return sqlite3_column_type(stmt_, col); }
  bool Null(int col) const { return Type(col) == SQLITE_NULL; }
  int64_t Int(int col) const { return sqlite3_column_int64(stmt_, col); }
  // Valid until the next Step() (SQLite owns the buffer).
  std::string_view Text(int col) const {
    const unsigned char* p = sqlite3_column_text(stmt_, col);
    if (p == nullptr) return {};
    return {reinterpret_cast<const char*>(p),
            static_cast<size_t>(sqlite3_column_bytes(stmt_, col))};
  }

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
};

// Damage tallies, kept as plain integers on the row path and flushed into
// trace.counters once at the end.
struct Tallies {
  uint64_t missing_table = 0;
  uint64_t missing_column = 0;
  uint64_t corrupt_table = 0;
  uint64_t corrupt_schema = 0;  // truncated/corrupt file read in salvage mode
  uint64_t query_error = 0;
  uint64_t interrupted = 0;
  uint64_t no_session_start = 0;
  uint64_t null_start = 0;         // row dropped
  uint64_t null_process = 0;       // row dropped: no globalTid/globalPid
  uint64_t null_end = 0;           // kept as an instant (end = start)
  uint64_t null_field = 0;         // other field defaulted (0 / empty name)
  uint64_t negative_duration = 0;  // kept with end = start
  uint64_t unknown_string_id = 0;  // name left empty
  uint64_t runtime_backtrace_skipped = 0;
  uint64_t runtime_unknown_class = 0;
  uint64_t nvtx_skipped = 0;     // NVTX rows of other types (thread names, categories...)
  uint64_t nvtx_open_range = 0;  // range with no end
  uint64_t nvtx_unknown_domain = 0;
};

class NsysImporter {
 public:
  NsysImporter(const std::string& path, const NsysImportOptions& options, Trace& trace)
      : path_(path), options_(options), trace_(trace) {}
  ~NsysImporter() { sqlite3_close(db_); }
  NsysImporter(const NsysImporter&) = delete;
  NsysImporter& operator=(const NsysImporter&) = delete;

  Status Run();

 private:
  struct TableInfo {
    std::string name;                  // as spelled in sqlite_master
    std::vector<std::string> columns;  // lower case
    bool columns_loaded = false;
  };

  Status Open();
  Status LoadSchema();
  // Reads table names from sqlite_master into tables_; returns the last sqlite3_step code.
  int ScanSchema();
  const TableInfo* FindTable(std::string_view name);
  static bool HasColumn(const TableInfo& t, std::string_view column);
  // "\"col\"" when the column exists, else "NULL" (the row code then sees NULL).
  static std::string ColumnOrNull(const TableInfo& t, std::string_view column);
  std::string SelectSql(const TableInfo& t, std::initializer_list<std::string_view> columns);
  // Counts every absent column of `columns`; true when all exist.
  bool Require(const TableInfo& t, std::initializer_list<std::string_view> columns);
  int64_t CountRows(const TableInfo& t);
  void NoteQueryError(int rc);
  template <typename RowFn>
  void ForEachRow(const std::string& sql, RowFn&& fn);

  void LoadStrings();
  void LoadEnums();
  void LoadSessionStart();
  void LoadHosts();
  void ReserveEvents();
  void ImportNvtx();
  void ImportApi(const TableInfo& t, bool driver_table);
  void ImportGpu(const TableInfo& t, EventType type);
  void FillProcessLabels();
  void FlushCounters();

  StringId NameFromId(int64_t id);
  // A name column that holds a StringIds id (usual) or the text itself (some versions).
  StringId NameFromColumn(const Statement& st, int col);
  uint32_t ProcessFor(int64_t global_id);
  int64_t ToUtc(int64_t t) const {
    // Unsigned add: wraps instead of overflowing on a hostile timestamp.
    return static_cast<int64_t>(static_cast<uint64_t>(t) + static_cast<uint64_t>(session_start_));
  }
  // Reads start/end at columns 0 and 1 into the row; false when the row must be dropped.
  // A NULL end gives an instant, counted as nsys.null_end when `count_null_end`.
  bool ReadInterval(const Statement& st, EventRow& row, bool count_null_end = true);
  StringId MemcpyName(int64_t kind);
  // Launch geometry of a kernel row (columns 12..19 of ImportGpu's query) as its
  // signature (docs/signature.md); 0 when the export lacks it. Geometry columns are
  // optional: an export without them is not damaged, so nothing is counted.
  StringId KernelSignature(const Statement& st);
  StringId SyncName(int64_t kind);

  const std::string& path_;
  const NsysImportOptions& options_;
  Trace& trace_;
  sqlite3* db_ = nullptr;
  uint64_t vm_steps_ = 0;
  bool interrupted_ = false;
  Tallies tallies_;

  std::unordered_map<std::string, TableInfo> tables_;  // key: lower-case name

  // StringIds: text by id, and its pool id once interned (kNotFound until then). Ids are
  // dense from 0 in real exports; ids too large for the vector go to the overflow map.
  std::vector<std::string> strings_;
  std::vector<StringId> interned_;
  std::unordered_map<int64_t, std::string> sparse_strings_;
  std::unordered_map<int64_t, StringId> sparse_interned_;

  int64_t session_start_ = 0;

  // Event codes, from the ENUM_* tables when present.
  int64_t nvtx_mark_ = kFallbackNvtxMark, nvtxt_mark_ = kFallbackNvtxtMark;
  int64_t nvtx_push_ = kFallbackNvtxPushRange, nvtx_pop_ = kFallbackNvtxPopRange;
  int64_t nvtx_pushpop_ = kFallbackNvtxPushPopRange, nvtxt_pushpop_ = kFallbackNvtxtPushPopRange;
  int64_t nvtx_startend_ = kFallbackNvtxStartEndRange;
  int64_t nvtxt_startend_ = kFallbackNvtxtStartEndRange;
  int64_t nvtx_domain_create_ = kFallbackNvtxDomainCreate;
  int64_t class_runtime_ = kFallbackClassRuntime, class_driver_ = kFallbackClassDriver;
  int64_t class_backtrace_ = kFallbackClassBacktrace;
  std::unordered_map<int64_t, std::string> memcpy_labels_, sync_labels_;
  std::unordered_map<int64_t, StringId> memcpy_names_, sync_names_;
  std::string signature_;  // reused text buffer of KernelSignature

  // Hosts by vm (globalVid >> 48); default_host_ when the vm is not listed.
  std::unordered_map<uint64_t, std::string> vm_hosts_;
  std::string default_host_;

  // (vm << 24 | pid) -> process index; last lookup cached (rows come in runs).
  std::unordered_map<uint64_t, uint32_t> processes_;
  uint64_t last_key_ = ~uint64_t{0};
  uint32_t last_process_ = 0;

  StringId cat_nvtx_ = 0, cat_runtime_ = 0, cat_driver_ = 0, cat_kernel_ = 0;
  StringId cat_memcpy_ = 0, cat_memset_ = 0, cat_sync_ = 0, memset_name_ = 0;
};

Status NsysImporter::Open() {
  struct stat st;
  if (stat(path_.c_str(), &st) != 0) {
    return Status::Error("cannot open " + path_ + ": " + std::strerror(errno));
  }
  if (S_ISDIR(st.st_mode))
    return Status::Error(path_ + ": is a directory, expected an nsys .sqlite export");
  // immutable=1 first: no locks, no journal lookup, so exports on read-only media (and
  // read-only bind mounts, where even a shared lock can fail) open; an export is never
  // written while Teller reads it.
  const std::string uri = "file:" + UriPath(path_) + "?immutable=1";
  int rc = sqlite3_open_v2(uri.c_str(), &db_, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, nullptr);
  if (rc != SQLITE_OK) {
    sqlite3_close(db_);
    db_ = nullptr;
    rc = sqlite3_open_v2(path_.c_str(), &db_, SQLITE_OPEN_READONLY, nullptr);
  }
  if (rc != SQLITE_OK) {
    std::string msg =
        path_ + ": cannot open as SQLite: " + (db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc));
    return Status::Error(std::move(msg));
  }
  if (options_.max_vm_steps > 0) {
    sqlite3_progress_handler(
        db_, 1000,
        [](void* self) -> int {
          auto* importer = static_cast<NsysImporter*>(self);
          importer->vm_steps_ += 1000;
          return importer->vm_steps_ > importer->options_.max_vm_steps ? 1 : 0;
        },
        this);
  }
  return Status::Ok();
}

int NsysImporter::ScanSchema() {
  Statement st(db_);
  int rc = st.Prepare("SELECT name FROM sqlite_master WHERE type = 'table'");
  if (rc != SQLITE_OK) return rc;
  while ((rc = st.Step()) == SQLITE_ROW) {
    if (st.Null(0)) continue;
    TableInfo info;
    info.name = std::string(st.Text(0));
    tables_.emplace(Lower(info.name), std::move(info));
  }
  return rc;
}

Status NsysImporter::LoadSchema() {
  int rc = ScanSchema();
  if ((rc & 0xff) == SQLITE_NOTADB) {
    return Status::Error(path_ +
                         ": not an SQLite database (expected an Nsight Systems "
                         ".sqlite export; a .nsys-rep must first be converted with "
                         "`nsys export --type sqlite`)");
  }
  if ((rc & 0xff) == SQLITE_CORRUPT) {
    // A truncated file: SQLite refuses any file shorter than its header's page count,
    // and the schema's pages are spread over the whole export. writable_schema lets it
    // read the pages that exist and accept the part of the schema found on them (the
    // connection stays read-only: nothing is written). Tables whose pages are gone then
    // stop with nsys.corrupt_table or are absent (nsys.missing_table).
    tables_.clear();
    if (sqlite3_exec(db_, "PRAGMA writable_schema = ON", nullptr, nullptr, nullptr) == SQLITE_OK) {
      rc = ScanSchema();
    }
    if (tables_.empty()) {
      return Status::Error(path_ + ": cannot read the SQLite schema (sqlite_master): " +
                           sqlite3_errmsg(db_) + "; the file is truncated or corrupt");
    }
    ++tallies_.corrupt_schema;
    rc = SQLITE_DONE;
  }
  if (rc != SQLITE_DONE) {
    return Status::Error(path_ +
                         ": cannot read the SQLite schema (sqlite_master): " + sqlite3_errmsg(db_));
  }
  bool is_nsys = tables_.count("stringids") > 0 || tables_.count("nvtx_events") > 0;
  for (const auto& [key, info] : tables_) {
    if (key.rfind("cupti_activity_kind_", 0) == 0) is_nsys = true;
  }
  if (!is_nsys) {
    return Status::Error(path_ +
                         ": an SQLite database but not an Nsight Systems export (no "
                         "StringIds, NVTX_EVENTS or CUPTI_ACTIVITY_KIND_* table)");
  }
  return Status::Ok();
}

const NsysImporter::TableInfo* NsysImporter::FindTable(std::string_view name) {
  auto it = tables_.find(Lower(name));
  if (it == tables_.end()) return nullptr;
  TableInfo& t = it->second;
  if (!t.columns_loaded) {
    t.columns_loaded = true;
    Statement st(db_);
    int rc = st.Prepare("SELECT name FROM pragma_table_info(?1)");
    if (rc == SQLITE_OK) rc = st.BindText(1, t.name);
    if (rc == SQLITE_OK) {
      while ((rc = st.Step()) == SQLITE_ROW) t.columns.push_back(Lower(st.Text(0)));
    }
    if (rc != SQLITE_DONE && rc != SQLITE_OK) NoteQueryError(rc);
  }
  return &t;
}

bool NsysImporter::HasColumn(const TableInfo& t, std::string_view column) {
  const std::string lower = Lower(column);
  return std::find(t.columns.begin(), t.columns.end(), lower) != t.columns.end();
}

std::string NsysImporter::ColumnOrNull(const TableInfo& t, std::string_view column) {
  return HasColumn(t, column) ? Quote(column) : "NULL";
}

std::string NsysImporter::SelectSql(const TableInfo& t,
                                    std::initializer_list<std::string_view> columns) {
  std::string sql = "SELECT ";
  bool first = true;
  for (std::string_view c : columns) {
    if (!first) sql += ", ";
    first = false;
    sql += ColumnOrNull(t, c);
  }
  sql += " FROM " + Quote(t.name);
  return sql;
}

bool NsysImporter::Require(const TableInfo& t, std::initializer_list<std::string_view> columns) {
  bool all = true;
  for (std::string_view c : columns) {
    if (!HasColumn(t, c)) {
      ++tallies_.missing_column;
      all = false;
    }
  }
  return all;
}

void NsysImporter::NoteQueryError(int rc) {
  switch (rc & 0xff) {
    case SQLITE_INTERRUPT:
      if (!interrupted_) ++tallies_.interrupted;
      interrupted_ = true;
      break;
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
    case SQLITE_IOERR:
    case SQLITE_FORMAT:
    case SQLITE_RANGE:
    case SQLITE_NOMEM:  // a corrupt record can declare a huge size
      ++tallies_.corrupt_table;
      break;
    default:
      ++tallies_.query_error;
      break;
  }
}

template <typename RowFn>
void NsysImporter::ForEachRow(const std::string& sql, RowFn&& fn) {
  if (interrupted_) return;
  Statement st(db_);
  int rc = st.Prepare(sql);
  if (rc != SQLITE_OK) {
    NoteQueryError(rc);
    return;
  }
  while ((rc = st.Step()) == SQLITE_ROW) fn(st);
  // Rows read before a corrupt page stay in the trace (documented).
  if (rc != SQLITE_DONE) NoteQueryError(rc);
}

int64_t NsysImporter::CountRows(const TableInfo& t) {
  if (interrupted_) return 0;
  // Only a reservation hint: an error here is left to the real query to count.
  Statement st(db_);
  if (st.Prepare("SELECT COUNT(*) FROM " + Quote(t.name)) != SQLITE_OK) return 0;
  const int rc = st.Step();
  if (rc == SQLITE_ROW) return std::max<int64_t>(0, st.Int(0));
  if ((rc & 0xff) == SQLITE_INTERRUPT) NoteQueryError(rc);
  return 0;
}

void NsysImporter::LoadStrings() {
  const TableInfo* t = FindTable("StringIds");
  if (t == nullptr) {
    ++tallies_.missing_table;
    return;
  }
  if (!Require(*t, {"id", "value"})) return;
  const int64_t rows = CountRows(*t);
  // Dense ids up to a bound derived from the row count keep a hostile id (2^60) from
  // allocating; real exports number their strings 0..rows-1.
  const int64_t dense_limit = std::min<int64_t>(rows, int64_t{1} << 26) * 2 + 1024;
  strings_.reserve(static_cast<size_t>(std::min<int64_t>(rows, int64_t{1} << 26)));
  ForEachRow(SelectSql(*t, {"id", "value"}), [&](const Statement& st) {
    if (st.Null(0)) {
      ++tallies_.null_field;
      return;
    }
    const int64_t id = st.Int(0);
    if (id >= 0 && id < dense_limit) {
      if (static_cast<size_t>(id) >= strings_.size()) strings_.resize(id + 1);
      strings_[id] = st.Text(1);
    } else {
      sparse_strings_[id] = std::string(st.Text(1));
    }
  });
  interned_.assign(strings_.size(), StringPool::kNotFound);
}

StringId NsysImporter::NameFromId(int64_t id) {
  if (id >= 0 && static_cast<size_t>(id) < strings_.size()) {
    StringId& slot = interned_[id];
    if (slot == StringPool::kNotFound) slot = trace_.strings.Intern(strings_[id]);
    return slot;
  }
  if (auto it = sparse_interned_.find(id); it != sparse_interned_.end()) return it->second;
  auto it = sparse_strings_.find(id);
  if (it == sparse_strings_.end()) {
    ++tallies_.unknown_string_id;
    return 0;
  }
  const StringId sid = trace_.strings.Intern(it->second);
  sparse_interned_.emplace(id, sid);
  return sid;
}

StringId NsysImporter::NameFromColumn(const Statement& st, int col) {
  switch (st.Type(col)) {
    case SQLITE_INTEGER:
      return NameFromId(st.Int(col));
    case SQLITE_TEXT:
      return trace_.strings.Intern(st.Text(col));
    default:
      return 0;
  }
}

void NsysImporter::LoadEnums() {
  // Each ENUM_* table maps id -> name (a C-style constant) and label (human text).
  auto read_enum = [&](std::string_view table, auto&& on_row) {
    const TableInfo* t = FindTable(table);
    if (t == nullptr || !HasColumn(*t, "id") || !HasColumn(*t, "name")) return;
    ForEachRow(SelectSql(*t, {"id", "name", "label"}), [&](const Statement& st) {
      if (!st.Null(0)) on_row(st.Int(0), st.Text(1), st.Text(2));
    });
  };
  const std::pair<std::string_view, int64_t*> codes[] = {
      {"NvtxMark", &nvtx_mark_},
      {"NvtxtMark", &nvtxt_mark_},
      {"NvtxPushRange", &nvtx_push_},
      {"NvtxPopRange", &nvtx_pop_},
      {"NvtxPushPopRange", &nvtx_pushpop_},
      {"NvtxtPushPopRange", &nvtxt_pushpop_},
      {"NvtxStartEndRange", &nvtx_startend_},
      {"NvtxtStartEndRange", &nvtxt_startend_},
      {"NvtxDomainCreate", &nvtx_domain_create_},
      {"TRACE_PROCESS_EVENT_CUDA_RUNTIME", &class_runtime_},
      {"TRACE_PROCESS_EVENT_CUDA_DRIVER", &class_driver_},
      {"TRACE_PROCESS_EVENT_CUDABACKTRACE", &class_backtrace_},
  };
  auto set_code = [&](int64_t id, std::string_view name, std::string_view) {
    for (const auto& [code_name, slot] : codes) {
      if (name == code_name) *slot = id;
    }
  };
  read_enum("ENUM_NSYS_EVENT_TYPE", set_code);
  read_enum("ENUM_NSYS_EVENT_CLASS", set_code);
  read_enum("ENUM_CUDA_MEMCPY_OPER", [&](int64_t id, std::string_view, std::string_view label) {
    memcpy_labels_[id] = std::string(label);
  });
  read_enum("ENUM_CUPTI_SYNC_TYPE", [&](int64_t id, std::string_view, std::string_view label) {
    sync_labels_[id] = std::string(label);
  });
}

void NsysImporter::LoadSessionStart() {
  const TableInfo* t = FindTable("TARGET_INFO_SESSION_START_TIME");
  bool found = false;
  if (t == nullptr) {
    ++tallies_.missing_table;
  } else if (Require(*t, {"utcEpochNs"})) {
    ForEachRow(SelectSql(*t, {"utcEpochNs"}) + " LIMIT 1", [&](const Statement& st) {
      if (st.Null(0)) return;
      session_start_ = st.Int(0);
      found = true;
    });
  }
  if (!found) {
    session_start_ = 0;
    ++tallies_.no_session_start;
  }
}

void NsysImporter::LoadHosts() {
  const TableInfo* t = FindTable("TARGET_INFO_SYSTEM_ENV");
  if (t != nullptr && HasColumn(*t, "name") && HasColumn(*t, "value")) {
    ForEachRow(SelectSql(*t, {"globalVid", "value"}) + " WHERE \"name\" = 'Hostname'",
               [&](const Statement& st) {
                 const std::string_view host = st.Text(1);
                 if (host.empty()) return;
                 const uint64_t vm = st.Null(0) ? 0 : static_cast<uint64_t>(st.Int(0)) >> 48;
                 vm_hosts_.emplace(vm, std::string(host));
                 if (default_host_.empty()) default_host_ = std::string(host);
               });
  }
  // Without a host name the file itself identifies the machine: pids from two exports
  // must not merge just because they collide.
  if (default_host_.empty()) default_host_ = "nsys:" + Basename(path_);
}

uint32_t NsysImporter::ProcessFor(int64_t global_id) {
  const uint64_t key = PidKey(global_id);
  if (key == last_key_) return last_process_;
  auto it = processes_.find(key);
  uint32_t index;
  if (it != processes_.end()) {
    index = it->second;
  } else {
    auto host = vm_hosts_.find(VmOfKey(key));
    index =
        trace_.ProcessIndex(host != vm_hosts_.end() ? host->second : default_host_, PidOfKey(key));
    ProcessInfo& p = trace_.processes[index];
    if (p.source == 0) p.source = trace_.strings.Intern(path_);
    processes_.emplace(key, index);
  }
  last_key_ = key;
  last_process_ = index;
  return index;
}

void NsysImporter::FillProcessLabels() {
  const TableInfo* t = FindTable("PROCESSES");
  if (t == nullptr) {
    ++tallies_.missing_table;
  } else if (!processes_.empty() && Require(*t, {"globalPid", "name"})) {
    ForEachRow(SelectSql(*t, {"globalPid", "name"}), [&](const Statement& st) {
      if (st.Null(0)) return;
      auto it = processes_.find(PidKey(st.Int(0)));
      if (it == processes_.end()) return;
      ProcessInfo& p = trace_.processes[it->second];
      const std::string_view name = st.Text(1);
      if (p.label == 0 && !name.empty()) p.label = trace_.strings.Intern(name);
    });
  }
  const StringId file_label = trace_.strings.Intern(Basename(path_));
  for (const auto& [key, index] : processes_) {
    if (trace_.processes[index].label == 0) trace_.processes[index].label = file_label;
  }
}

void NsysImporter::ReserveEvents() {
  int64_t total = 0;
  for (std::string_view name :
       {"NVTX_EVENTS", "CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_DRIVER",
        "CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET",
        "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"}) {
    if (const TableInfo* t = FindTable(name)) total += CountRows(*t);
  }
  // COUNT(*) is the real row count of the file, so this is bounded by the file's size.
  trace_.events.Reserve(trace_.events.size() + static_cast<size_t>(total));
}

bool NsysImporter::ReadInterval(const Statement& st, EventRow& row, bool count_null_end) {
  if (st.Null(0)) {
    ++tallies_.null_start;
    return false;
  }
  const int64_t start = st.Int(0);
  int64_t end = start;
  if (st.Null(1)) {
    if (count_null_end) ++tallies_.null_end;
  } else {
    end = st.Int(1);
    if (end < start) {
      ++tallies_.negative_duration;
      end = start;
    }
  }
  row.start_ns = ToUtc(start);
  row.end_ns = ToUtc(end);
  return true;
}

void NsysImporter::ImportNvtx() {
  const TableInfo* t = FindTable("NVTX_EVENTS");
  if (t == nullptr) {
    ++tallies_.missing_table;
    return;
  }
  if (!Require(*t, {"start", "eventType", "globalTid"})) return;
  Require(*t, {"end", "domainId"});
  if (!HasColumn(*t, "text") && !HasColumn(*t, "textId")) ++tallies_.missing_column;

  // Domain names are resolved after the pass: the NvtxDomainCreate row need not come
  // first in the table. Key: (process key, domainId).
  struct PendingDomain {
    size_t event;
    uint64_t key;
    int64_t domain_id;
  };
  std::vector<PendingDomain> pending;
  std::unordered_map<uint64_t, std::unordered_map<int64_t, StringId>> domains;

  ForEachRow(
      SelectSql(*t, {"start", "end", "eventType", "text", "textId", "globalTid", "domainId"}),
      [&](const Statement& st) {
        if (st.Null(2)) {
          ++tallies_.nvtx_skipped;
          return;
        }
        const int64_t code = st.Int(2);
        StringId name = 0;
        if (!st.Null(3)) {
          name = trace_.strings.Intern(st.Text(3));
        } else if (!st.Null(4)) {
          name = NameFromColumn(st, 4);
        }
        if (code == nvtx_domain_create_) {
          if (!st.Null(6) && !st.Null(5)) domains[PidKey(st.Int(5))][st.Int(6)] = name;
          return;
        }
        EventRow row;
        if (code == nvtx_pushpop_ || code == nvtxt_pushpop_) {
          // Complete in the export; no end means the range was still open at the end
          // of the capture: a push the reconstruction closes and counts.
          row.type = st.Null(1) ? EventType::kPush : EventType::kRange;
          if (st.Null(1)) ++tallies_.nvtx_open_range;
        } else if (code == nvtx_startend_ || code == nvtxt_startend_) {
          row.type = EventType::kRange;
          if (st.Null(1)) ++tallies_.nvtx_open_range;
        } else if (code == nvtx_mark_ || code == nvtxt_mark_) {
          row.type = EventType::kMark;
        } else if (code == nvtx_push_) {
          row.type = EventType::kPush;
        } else if (code == nvtx_pop_) {
          row.type = EventType::kPop;
        } else {
          ++tallies_.nvtx_skipped;  // thread/category naming, payload-only rows...
          return;
        }
        if (st.Null(5)) {
          ++tallies_.null_process;
          return;
        }
        if (row.type == EventType::kRange) {
          // An open start/end range was counted as nvtx_open_range above.
          if (!ReadInterval(st, row, /*count_null_end=*/false)) return;
        } else {
          if (st.Null(0)) {
            ++tallies_.null_start;
            return;
          }
          row.start_ns = row.end_ns = ToUtc(st.Int(0));
        }
        const int64_t gtid = st.Int(5);
        row.name = name;
        row.category = cat_nvtx_;
        row.process = ProcessFor(gtid);
        row.thread = TidOf(gtid);
        const size_t index = trace_.events.Append(row);
        if (!st.Null(6) && st.Int(6) != 0) pending.push_back({index, PidKey(gtid), st.Int(6)});
      });

  std::unordered_map<int64_t, StringId> unnamed;
  for (const PendingDomain& p : pending) {
    StringId domain = 0;
    auto proc = domains.find(p.key);
    if (proc != domains.end()) {
      if (auto d = proc->second.find(p.domain_id); d != proc->second.end()) domain = d->second;
    }
    if (domain == 0) {
      ++tallies_.nvtx_unknown_domain;
      auto [it, inserted] = unnamed.emplace(p.domain_id, 0);
      if (inserted)
        it->second = trace_.strings.Intern("nvtx-domain-" + std::to_string(p.domain_id));
      domain = it->second;
    }
    trace_.events.domain[p.event] = domain;
  }
}

void NsysImporter::ImportApi(const TableInfo& t, bool driver_table) {
  if (!Require(t, {"start", "globalTid"})) return;
  Require(t, {"end", "correlationId", "nameId"});
  const bool has_class = HasColumn(t, "eventClass");
  ForEachRow(
      SelectSql(t, {"start", "end", "globalTid", "correlationId", "nameId", "eventClass", "name"}),
      [&](const Statement& st) {
        EventRow row;
        row.type = driver_table ? EventType::kDriver : EventType::kRuntime;
        if (has_class && !st.Null(5)) {
          const int64_t cls = st.Int(5);
          if (cls == class_backtrace_) {
            ++tallies_.runtime_backtrace_skipped;
            return;
          }
          if (cls == class_driver_) {
            row.type = EventType::kDriver;
          } else if (cls == class_runtime_) {
            row.type = EventType::kRuntime;
          } else {
            ++tallies_.runtime_unknown_class;  // kept with the table's type
          }
        }
        if (st.Null(2)) {
          ++tallies_.null_process;
          return;
        }
        if (!ReadInterval(st, row)) return;
        const int64_t gtid = st.Int(2);
        row.process = ProcessFor(gtid);
        row.thread = TidOf(gtid);
        row.category = row.type == EventType::kDriver ? cat_driver_ : cat_runtime_;
        if (st.Null(3)) {
          ++tallies_.null_field;
        } else {
          row.correlation = static_cast<uint64_t>(st.Int(3));
        }
        if (!st.Null(4)) {
          row.name = NameFromColumn(st, 4);
        } else if (!st.Null(6) && !st.Text(6).empty()) {
          row.name = trace_.strings.Intern(st.Text(6));
        } else {
          ++tallies_.null_field;
        }
        trace_.events.Append(row);
      });
}

StringId NsysImporter::MemcpyName(int64_t kind) {
  auto it = memcpy_names_.find(kind);
  if (it != memcpy_names_.end()) return it->second;
  std::string label;
  if (auto l = memcpy_labels_.find(kind); l != memcpy_labels_.end()) {
    label = l->second;
  } else if (kind >= 0 && kind < static_cast<int64_t>(std::size(kFallbackMemcpyLabels))) {
    label = kFallbackMemcpyLabels[kind];
  } else {
    label = "kind " + std::to_string(kind);
  }
  const StringId id = trace_.strings.Intern("[CUDA memcpy " + label + "]");
  memcpy_names_.emplace(kind, id);
  return id;
}

StringId NsysImporter::SyncName(int64_t kind) {
  auto it = sync_names_.find(kind);
  if (it != sync_names_.end()) return it->second;
  std::string label;
  if (auto l = sync_labels_.find(kind); l != sync_labels_.end()) {
    label = l->second;
  } else if (kind >= 0 && kind < static_cast<int64_t>(std::size(kFallbackSyncLabels))) {
    label = kFallbackSyncLabels[kind];
  } else {
    label = "type " + std::to_string(kind);
  }
  const StringId id = trace_.strings.Intern("[CUDA " + label + "]");
  sync_names_.emplace(kind, id);
  return id;
}

StringId NsysImporter::KernelSignature(const Statement& st) {
  SignatureFields f;
  for (int i = 0; i < 6; ++i) {
    const int col = 12 + i;
    if (st.Null(col) || st.Int(col) < 0) return 0;
    (i < 3 ? f.grid[i] : f.block[i - 3]) = static_cast<uint64_t>(st.Int(col));
  }
  f.has_grid = true;
  // Kineto and the Teller collector write the same sum as one number.
  for (const int col : {18, 19}) {
    if (!st.Null(col) && st.Int(col) > 0) f.smem += static_cast<uint64_t>(st.Int(col));
  }
  signature_.clear();
  AppendSignature(f, signature_);
  return trace_.strings.Intern(signature_);
}

void NsysImporter::ImportGpu(const TableInfo& t, EventType type) {
  if (!Require(t, {"start", "globalPid"})) return;
  Require(t, {"end", "deviceId", "streamId", "correlationId"});
  std::string_view extra = "NULL";  // column 6
  switch (type) {
    case EventType::kKernel:
      if (!HasColumn(t, "demangledName") && !HasColumn(t, "shortName") &&
          !HasColumn(t, "mangledName")) {
        ++tallies_.missing_column;
      }
      break;
    case EventType::kMemcpy:
      Require(t, {"bytes", "copyKind"});
      extra = "copyKind";
      break;
    case EventType::kMemset:
      Require(t, {"bytes"});
      break;
    default:
      Require(t, {"syncType"});
      extra = "syncType";
      break;
  }
  const StringId category = type == EventType::kKernel   ? cat_kernel_
                            : type == EventType::kMemcpy ? cat_memcpy_
                            : type == EventType::kMemset ? cat_memset_
                                                         : cat_sync_;
  ForEachRow(SelectSql(t, {"start",
                           "end",
                           "globalPid",
                           "correlationId",
                           "deviceId",
                           "streamId",
                           extra,
                           "bytes",
                           "graphNodeId",
                           "demangledName",
                           "shortName",
                           "mangledName",
                           "gridX",
                           "gridY",
                           "gridZ",
                           "blockX",
                           "blockY",
                           "blockZ",
                           "staticSharedMemory",
                           "dynamicSharedMemory"}),
             [&](const Statement& st) {
               EventRow row;
               row.type = type;
               row.category = category;
               if (st.Null(2)) {
                 ++tallies_.null_process;
                 return;
               }
               if (!ReadInterval(st, row)) return;
               row.process = ProcessFor(st.Int(2));
               if (st.Null(3)) {
                 ++tallies_.null_field;
               } else {
                 row.correlation = static_cast<uint64_t>(st.Int(3));
               }
               if (st.Null(4) || st.Null(5)) ++tallies_.null_field;
               row.device = static_cast<uint32_t>(st.Int(4));
               row.stream = static_cast<uint32_t>(st.Int(5));
               row.thread = row.stream;
               if (!st.Null(8) && st.Int(8) != 0) row.flags |= kEventInGraph;
               switch (type) {
                 case EventType::kKernel:
                   // The demangled signature, as Kineto names kernels, so that name rules work
                   // on both inputs; the short name, then the mangled one, when it is absent.
                   for (int col : {9, 10, 11}) {
                     if (!st.Null(col)) row.name = NameFromColumn(st, col);
                     if (row.name != 0) break;
                   }
                   if (row.name == 0) ++tallies_.null_field;
                   row.signature = KernelSignature(st);
                   break;
                 case EventType::kMemcpy:
                 case EventType::kMemset:
                   if (st.Null(7)) {
                     ++tallies_.null_field;
                   } else {
                     row.bytes = static_cast<uint64_t>(st.Int(7));
                   }
                   if (type == EventType::kMemset) {
                     row.name = memset_name_;
                   } else {
                     if (st.Null(6)) ++tallies_.null_field;
                     row.name = MemcpyName(st.Null(6) ? 0 : st.Int(6));
                   }
                   break;
                 default:
                   if (st.Null(6)) ++tallies_.null_field;
                   row.name = SyncName(st.Null(6) ? 0 : st.Int(6));
                   break;
               }
               trace_.events.Append(row);
             });
}

void NsysImporter::FlushCounters() {
  const std::pair<CounterId, uint64_t> items[] = {
      {CounterId::kNsysMissingTable, tallies_.missing_table},
      {CounterId::kNsysMissingColumn, tallies_.missing_column},
      {CounterId::kNsysCorruptTable, tallies_.corrupt_table},
      {CounterId::kNsysCorruptSchema, tallies_.corrupt_schema},
      {CounterId::kNsysQueryError, tallies_.query_error},
      {CounterId::kNsysInterrupted, tallies_.interrupted},
      {CounterId::kNsysNoSessionStart, tallies_.no_session_start},
      {CounterId::kNsysNullStart, tallies_.null_start},
      {CounterId::kNsysNullProcess, tallies_.null_process},
      {CounterId::kNsysNullEnd, tallies_.null_end},
      {CounterId::kNsysNullField, tallies_.null_field},
      {CounterId::kNsysNegativeDuration, tallies_.negative_duration},
      {CounterId::kNsysUnknownStringId, tallies_.unknown_string_id},
      {CounterId::kNsysRuntimeBacktraceSkipped, tallies_.runtime_backtrace_skipped},
      {CounterId::kNsysRuntimeUnknownClass, tallies_.runtime_unknown_class},
      {CounterId::kNsysNvtxSkipped, tallies_.nvtx_skipped},
      {CounterId::kNsysNvtxOpenRange, tallies_.nvtx_open_range},
      {CounterId::kNsysNvtxUnknownDomain, tallies_.nvtx_unknown_domain},
  };
  for (const auto& [id, value] : items) {
    if (value > 0) trace_.counters.Add(id, value);
  }
}

Status NsysImporter::Run() {
  TELLER_RETURN_IF_ERROR(Open());
  TELLER_RETURN_IF_ERROR(LoadSchema());
  trace_.sources.push_back(path_);

  cat_nvtx_ = trace_.strings.Intern("nvtx");
  cat_runtime_ = trace_.strings.Intern("cuda_runtime");
  cat_driver_ = trace_.strings.Intern("cuda_driver");
  cat_kernel_ = trace_.strings.Intern("kernel");
  cat_memcpy_ = trace_.strings.Intern("gpu_memcpy");
  cat_memset_ = trace_.strings.Intern("gpu_memset");
  cat_sync_ = trace_.strings.Intern("cuda_sync");
  memset_name_ = trace_.strings.Intern("[CUDA memset]");

  LoadStrings();
  LoadEnums();
  LoadSessionStart();
  LoadHosts();
  ReserveEvents();

  // NVTX, runtime, driver, then the four GPU tables.
  ProgressTask progress("importing " + path_, 7, ProgressUnit::kItems, "tables");
  ImportNvtx();
  progress.Advance();
  if (const TableInfo* t = FindTable("CUPTI_ACTIVITY_KIND_RUNTIME")) {
    ImportApi(*t, /*driver_table=*/false);
  } else {
    ++tallies_.missing_table;
  }
  progress.Advance();
  // Absent in every export seen so far (driver calls share the runtime table); not
  // counted as missing.
  if (const TableInfo* t = FindTable("CUPTI_ACTIVITY_KIND_DRIVER")) ImportApi(*t, true);
  progress.Advance();
  const std::pair<std::string_view, EventType> gpu_tables[] = {
      {"CUPTI_ACTIVITY_KIND_KERNEL", EventType::kKernel},
      {"CUPTI_ACTIVITY_KIND_MEMCPY", EventType::kMemcpy},
      {"CUPTI_ACTIVITY_KIND_MEMSET", EventType::kMemset},
      {"CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", EventType::kSync},
  };
  for (const auto& [name, type] : gpu_tables) {
    if (const TableInfo* t = FindTable(name)) {
      ImportGpu(*t, type);
    } else {
      ++tallies_.missing_table;
    }
    progress.Advance();
  }
  FillProcessLabels();
  FlushCounters();
  return Status::Ok();
}

}  // namespace

Status ImportNsysSqliteWithOptions(const std::string& path, const NsysImportOptions& options,
                                   Trace& trace) {
  NsysImporter importer(path, options, trace);
  return importer.Run();
}

Status ImportNsysSqlite(const std::string& path, Trace& trace) {
  return ImportNsysSqliteWithOptions(path, NsysImportOptions{}, trace);
}

}  // namespace teller::ingest
