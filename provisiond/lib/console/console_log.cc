#include "console/console_log.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <unistd.h>

#include <chrono>

namespace prov {
namespace {

constexpr size_t kMaxLineBytes = 1000;

constexpr const char* kSchema =
    "PRAGMA journal_mode = WAL;"
    "PRAGMA synchronous = NORMAL;"
    "PRAGMA busy_timeout = 5000;"
    "CREATE TABLE IF NOT EXISTS console_lines ("
    "  id INTEGER PRIMARY KEY, node_id INTEGER NOT NULL, boot INTEGER NOT NULL,"
    "  time INTEGER NOT NULL, source TEXT NOT NULL, line TEXT NOT NULL);"
    "CREATE INDEX IF NOT EXISTS console_by_boot ON console_lines (node_id, boot, id);"
    "CREATE INDEX IF NOT EXISTS console_by_node ON console_lines (node_id, id);";

// A prepared statement, finalized by its owner.
class Query {
 public:
  Query(sqlite3* db, const char* sql) { sqlite3_prepare_v2(db, sql, -1, &s_, nullptr); }
  ~Query() { sqlite3_finalize(s_); }
  Query(const Query&) = delete;
  Query& operator=(const Query&) = delete;
  sqlite3_stmt* get() const { return s_; }
  Query& Bind(int i, int64_t v) {
    sqlite3_bind_int64(s_, i, v);
    return *this;
  }
  Query& Bind(int i, const std::string& v) {
    sqlite3_bind_text(s_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  bool Row() { return s_ && sqlite3_step(s_) == SQLITE_ROW; }
  bool Done() { return s_ && sqlite3_step(s_) == SQLITE_DONE; }
  int64_t Int(int col) const { return sqlite3_column_int64(s_, col); }
  std::string Text(int col) const {
    auto* p = reinterpret_cast<const char*>(sqlite3_column_text(s_, col));
    return p ? std::string(p, static_cast<size_t>(sqlite3_column_bytes(s_, col))) : std::string();
  }

 private:
  sqlite3_stmt* s_ = nullptr;
};

Status ConsoleSqlError(sqlite3* db, const std::string& what) {
  return Status::Error(Code::kInternal, "console log: " + what + ": " + sqlite3_errmsg(db));
}

ConsoleLine ReadConsoleLine(const Query& q) {
  return ConsoleLine{q.Int(0), q.Int(1), q.Int(2), q.Int(3), q.Text(4), q.Text(5)};
}

constexpr const char* kLineColumns = "id, node_id, boot, time, source, line";

std::string_view SkipKernelTime(std::string_view t) {
  // "[    1.234567] text"
  if (t.empty() || t[0] != '[') return t;
  size_t close = t.find(']');
  if (close == std::string_view::npos || close > 20) return t;
  for (size_t i = 1; i < close; ++i)
    if (!(t[i] == ' ' || t[i] == '.' || (t[i] >= '0' && t[i] <= '9'))) return t;
  t.remove_prefix(close + 1);
  while (!t.empty() && t[0] == ' ') t.remove_prefix(1);
  return t;
}

}  // namespace

std::vector<std::string> ConsoleTextLines(std::string_view datagram) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start <= datagram.size()) {
    size_t end = datagram.find('\n', start);
    if (end == std::string_view::npos) end = datagram.size();
    std::string_view raw = datagram.substr(start, end - start);
    start = end + 1;
    // "<6>" or "<30>": a syslog priority.
    if (raw.size() > 2 && raw[0] == '<') {
      size_t close = raw.find('>');
      if (close != std::string_view::npos && close <= 4 && close > 1 &&
          raw.substr(1, close - 1).find_first_not_of("0123456789") == std::string_view::npos)
        raw.remove_prefix(close + 1);
    }
    std::string line;
    for (char c : raw) {
      if (line.size() >= kMaxLineBytes) break;
      unsigned char u = static_cast<unsigned char>(c);
      if (c == '\t')
        line += ' ';
      else if (u >= 0x20 && u != 0x7f)
        line += c;
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    if (!line.empty()) lines.push_back(std::move(line));
  }
  return lines;
}

std::string ConsoleSource(std::string_view text) {
  std::string_view t = SkipKernelTime(text);
  if (t.substr(0, 11) == "provision: ") return "initrd";
  // "systemd[1]: Started ..." as journald forwards to the kernel log.
  size_t open = t.find('[');
  if (open != std::string_view::npos && open > 0 && open < 64) {
    bool ident = t.substr(0, open).find_first_of(" :") == std::string_view::npos;
    size_t close = t.find("]: ", open);
    if (ident && close != std::string_view::npos && close > open + 1 &&
        t.substr(open + 1, close - open - 1).find_first_not_of("0123456789") ==
            std::string_view::npos)
      return "system";
  }
  return "kernel";
}

namespace {

bool StartsBoot(const ConsoleLine& line) {
  return line.stage && IsLoaderStage(*line.stage);
}

}  // namespace

int64_t AssignBoot(ConsoleBootState& s, const ConsoleLine& line) {
  if (line.source == "provisiond") {
    if (s.boot == 0 || (s.past_loader && StartsBoot(line))) {
      ++s.boot;
      s.past_loader = false;
      s.kernel_seen = false;
    }
    return s.boot;
  }
  const bool banner =
      line.source == "kernel" && SkipKernelTime(line.text).substr(0, 14) == "Linux version ";
  if (s.boot == 0 || (banner && s.kernel_seen)) {
    ++s.boot;
    s.kernel_seen = false;
  }
  s.past_loader = true;
  s.kernel_seen |= banner;
  return s.boot;
}

Result<std::unique_ptr<ConsoleLog>> ConsoleLog::Open(const std::string& path,
                                                     ConsoleRetention keep) {
  if (path != ":memory:") {
    // 0600 from its creation: what nodes print may name their users.
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) return Status::Error(Code::kUnavailable, "cannot create " + path);
    ::close(fd);
  }
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) !=
      SQLITE_OK) {
    Status s = Status::Error(
        Code::kUnavailable, "cannot open " + path + ": " + (db ? sqlite3_errmsg(db) : "no memory"));
    sqlite3_close(db);
    return s;
  }
  char* err = nullptr;
  if (sqlite3_exec(db, kSchema, nullptr, nullptr, &err) != SQLITE_OK) {
    Status s = Status::Error(Code::kUnavailable,
                             path + ": cannot create the console tables: " + (err ? err : "?"));
    sqlite3_free(err);
    sqlite3_close(db);
    return s;
  }
  std::unique_ptr<ConsoleLog> log(new ConsoleLog(db, keep));
  Query q(db, "SELECT max(id) FROM console_lines");
  if (q.Row()) log->last_id_ = q.Int(0);
  return log;
}

ConsoleLog::~ConsoleLog() {
  sqlite3_close(db_);
}

ConsoleBootState& ConsoleLog::BootState(int64_t node_id) {
  auto it = boots_.find(node_id);
  if (it != boots_.end()) return it->second;
  ConsoleBootState s;
  Query last(db_,
             "SELECT boot, source FROM console_lines WHERE node_id = ?1 ORDER BY id DESC LIMIT 1");
  if (last.Bind(1, node_id).Row()) {
    s.boot = last.Int(0);
    s.past_loader = last.Text(1) != "provisiond";
    Query banner(db_,
                 "SELECT 1 FROM console_lines WHERE node_id = ?1 AND boot = ?2 AND "
                 "source = 'kernel' AND line LIKE '%Linux version %' LIMIT 1");
    s.kernel_seen = banner.Bind(1, node_id).Bind(2, s.boot).Row();
  }
  if (boots_.size() > 100000) boots_.clear();  // bounded; read again when needed
  return boots_[node_id] = s;
}

Status ConsoleLog::Prune(int64_t node_id, int64_t boot) {
  if (keep_.boots_per_node > 0 && boot > keep_.boots_per_node) {
    Query q(db_, "DELETE FROM console_lines WHERE node_id = ?1 AND boot <= ?2");
    if (!q.Bind(1, node_id).Bind(2, boot - keep_.boots_per_node).Done())
      return ConsoleSqlError(db_, "cannot remove old boots");
  }
  if (keep_.lines_per_node > 0) {
    Query q(db_,
            "DELETE FROM console_lines WHERE node_id = ?1 AND id <= (SELECT id FROM "
            "console_lines WHERE node_id = ?1 ORDER BY id DESC LIMIT 1 OFFSET ?2)");
    if (!q.Bind(1, node_id).Bind(2, keep_.lines_per_node).Done())
      return ConsoleSqlError(db_, "cannot remove old lines");
  }
  return Status::Ok();
}

Status ConsoleLog::Append(std::vector<ConsoleLine>& lines) {
  if (lines.empty()) return Status::Ok();
  std::unique_lock lock(mu_);
  if (sqlite3_exec(db_, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr) != SQLITE_OK)
    return ConsoleSqlError(db_, "cannot begin");
  // Boot numbers are given only once the rows are in: a rollback must not
  // leave the counters ahead of the table.
  std::map<int64_t, ConsoleBootState> states;
  std::map<int64_t, int64_t> boot_started;  // node -> first boot number this batch started
  Status s = Status::Ok();
  {
    Query insert(db_,
                 "INSERT INTO console_lines (node_id, boot, time, source, line) "
                 "VALUES (?1, ?2, ?3, ?4, ?5)");
    for (auto& line : lines) {
      auto st = states.find(line.node_id);
      if (st == states.end()) st = states.emplace(line.node_id, BootState(line.node_id)).first;
      int64_t before = st->second.boot;
      line.boot = AssignBoot(st->second, line);
      if (line.boot != before) boot_started.emplace(line.node_id, line.boot);
      sqlite3_reset(insert.get());
      insert.Bind(1, line.node_id).Bind(2, line.boot).Bind(3, line.time_ms);
      insert.Bind(4, line.source).Bind(5, line.text);
      if (!insert.Done()) {
        s = ConsoleSqlError(db_, "cannot append a line");
        break;
      }
      line.id = sqlite3_last_insert_rowid(db_);
    }
  }
  // The retention: on a new boot, and every 256 lines of a node.
  for (auto it = states.begin(); s.ok() && it != states.end(); ++it) {
    int64_t count = 0;
    for (const auto& l : lines) count += l.node_id == it->first;
    int64_t& since = appended_since_prune_[it->first];
    since += count;
    if (boot_started.count(it->first) || since >= 256) {
      since = 0;
      s = Prune(it->first, it->second.boot);
    }
  }
  if (!s.ok() || sqlite3_exec(db_, "COMMIT", nullptr, nullptr, nullptr) != SQLITE_OK) {
    if (s.ok()) s = ConsoleSqlError(db_, "cannot commit");
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    return s;
  }
  for (auto& [node, state] : states) boots_[node] = state;
  last_id_ = lines.back().id;
  lock.unlock();
  cv_.notify_all();
  return Status::Ok();
}

std::vector<ConsoleLine> ConsoleLog::Lines(int64_t node_id, int64_t boot, int64_t after,
                                           int64_t limit) {
  std::lock_guard lock(mu_);
  if (boot == 0) boot = BootState(node_id).boot;
  std::vector<ConsoleLine> out;
  Query q(db_, (std::string("SELECT ") + kLineColumns +
                " FROM console_lines WHERE node_id = ?1 AND boot = ?2 AND id > ?3 "
                "ORDER BY id LIMIT ?4")
                   .c_str());
  q.Bind(1, node_id).Bind(2, boot).Bind(3, after).Bind(4, limit);
  while (q.Row()) out.push_back(ReadConsoleLine(q));
  return out;
}

std::vector<int64_t> ConsoleLog::Boots(int64_t node_id) {
  std::lock_guard lock(mu_);
  std::vector<int64_t> out;
  Query q(db_, "SELECT DISTINCT boot FROM console_lines WHERE node_id = ?1 ORDER BY boot");
  q.Bind(1, node_id);
  while (q.Row()) out.push_back(q.Int(0));
  return out;
}

std::vector<ConsoleLine> ConsoleLog::Tail(int64_t node_id, int64_t count, ConsoleLine* error) {
  std::lock_guard lock(mu_);
  const int64_t boot = BootState(node_id).boot;
  std::vector<ConsoleLine> out;
  Query q(db_, (std::string("SELECT ") + kLineColumns +
                " FROM console_lines WHERE node_id = ?1 AND boot = ?2 ORDER BY id DESC LIMIT ?3")
                   .c_str());
  q.Bind(1, node_id).Bind(2, boot).Bind(3, count);
  while (q.Row()) out.insert(out.begin(), ReadConsoleLine(q));
  if (error) {
    *error = ConsoleLine{};
    // The failing line: the initrd's ERROR, a kernel panic, a unit that failed.
    Query e(db_, (std::string("SELECT ") + kLineColumns +
                  " FROM console_lines WHERE node_id = ?1 AND boot = ?2 AND source != 'provisiond' "
                  "AND (line GLOB '*ERROR*' OR line GLOB '*Kernel panic*' OR line GLOB "
                  "'*Failed to *' OR line GLOB '*error:*') ORDER BY id DESC LIMIT 1")
                     .c_str());
    e.Bind(1, node_id).Bind(2, boot);
    if (e.Row()) {
      ConsoleLine found = ReadConsoleLine(e);
      bool shown = !out.empty() && found.id >= out.front().id;
      if (!shown) *error = found;
    }
  }
  return out;
}

bool ConsoleLog::Wait(int64_t after, int64_t timeout_ms) {
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms),
               [&] { return stopping_ || last_id_ > after; });
  return !stopping_;
}

void ConsoleLog::WakeWaiters() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
}

int64_t ConsoleLog::LastId() {
  std::lock_guard lock(mu_);
  return last_id_;
}

}  // namespace prov
