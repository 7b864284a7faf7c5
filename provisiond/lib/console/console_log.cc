#include "console/console_log.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <chrono>

namespace prov {
namespace {

constexpr size_t kMaxLineBytes = 1000;

// Each connection's settings (not part of the schema).
constexpr const char* kPragmas =
    "PRAGMA journal_mode = WAL;"
    "PRAGMA synchronous = NORMAL;"
    "PRAGMA busy_timeout = 5000;";

// The console database's schema, numbered like the inventory's
// (db/sql.h): one that shipped is never edited, the next is added.
// 001 is the schema console.db had before it was numbered, written so that
// such a database (user_version 0, its tables there) becomes version 1 as it
// is.
constexpr sql::Migration kConsoleMigrations[] = {
    {"001_console_lines",
     "CREATE TABLE IF NOT EXISTS console_lines ("
     "  id INTEGER PRIMARY KEY, node_id INTEGER NOT NULL, boot INTEGER NOT NULL,"
     "  time INTEGER NOT NULL, source TEXT NOT NULL, line TEXT NOT NULL);"
     "CREATE INDEX IF NOT EXISTS console_by_boot ON console_lines (node_id, boot, id);"
     "CREATE INDEX IF NOT EXISTS console_by_node ON console_lines (node_id, id);"},
};

Status ConsoleError(const Status& s, const std::string& what) {
  return Status::Error(Code::kInternal, "console log: " + what + ": " + s.message());
}

ConsoleLine ReadConsoleLine(const sql::Statement& q) {
  return ConsoleLine{q.Int(0), q.Int(1), q.Int(2), q.Int(3), q.Text(4), q.Text(5)};
}

// A read's rows, each through `row`; an error is logged (the readers answer
// what they have: the web page and node why show fewer lines, never fail).
template <typename Fn>
void EachRow(sql::Statement& q, const char* what, Fn row) {
  for (;;) {
    auto more = q.Step();
    if (!more.ok()) {
      spdlog::warn("console log: {}: {}", what, more.status().message());
      break;
    }
    if (!*more) break;
    row(q);
  }
  q.Reset();
}

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

// The statements, prepared once when the log opens: a mistake in one is an
// error at start, not a query that silently returns nothing.
struct ConsoleLog::Statements {
  sql::Statement insert, last_line, kernel_banner, prune_boots, prune_lines, lines, boots, tail,
      error_line;
};

Result<std::unique_ptr<ConsoleLog>> ConsoleLog::Open(const std::string& path,
                                                     ConsoleRetention keep) {
  if (path != ":memory:") {
    // 0600 from its creation: what nodes print may name their users.
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) return Status::Error(Code::kUnavailable, "cannot create " + path);
    ::close(fd);
  }
  auto db = sql::Database::Open(path, sql::Database::Mode::kReadWriteCreate);
  if (!db.ok()) return db.status();
  if (Status st = db->Exec(kPragmas); !st.ok()) return st;
  if (Status st = sql::ApplyMigrations(*db, kConsoleMigrations, std::size(kConsoleMigrations),
                                       "the console log (" + path + ")");
      !st.ok())
    return st;
  std::unique_ptr<ConsoleLog> log(new ConsoleLog(std::move(*db), keep));
  sql::Database& d = log->db_;
  struct Sql {
    sql::Statement Statements::*member;
    const char* text;
  };
  const Sql all[] = {
      {&Statements::insert,
       "INSERT INTO console_lines (node_id, boot, time, source, line) VALUES (?1, ?2, ?3, ?4, ?5)"},
      {&Statements::last_line,
       "SELECT boot, source FROM console_lines WHERE node_id = ?1 ORDER BY id DESC LIMIT 1"},
      {&Statements::kernel_banner,
       "SELECT 1 FROM console_lines WHERE node_id = ?1 AND boot = ?2 AND source = 'kernel' AND "
       "line LIKE '%Linux version %' LIMIT 1"},
      {&Statements::prune_boots, "DELETE FROM console_lines WHERE node_id = ?1 AND boot <= ?2"},
      {&Statements::prune_lines,
       "DELETE FROM console_lines WHERE node_id = ?1 AND id <= (SELECT id FROM console_lines "
       "WHERE node_id = ?1 ORDER BY id DESC LIMIT 1 OFFSET ?2)"},
      {&Statements::lines,
       "SELECT id, node_id, boot, time, source, line FROM console_lines WHERE node_id = ?1 AND "
       "boot = ?2 AND id > ?3 ORDER BY id LIMIT ?4"},
      {&Statements::boots,
       "SELECT DISTINCT boot FROM console_lines WHERE node_id = ?1 ORDER BY boot"},
      {&Statements::tail,
       "SELECT id, node_id, boot, time, source, line FROM console_lines WHERE node_id = ?1 AND "
       "boot = ?2 ORDER BY id DESC LIMIT ?3"},
      // The failing line: the initrd's ERROR, a kernel panic, a unit that failed.
      {&Statements::error_line,
       "SELECT id, node_id, boot, time, source, line FROM console_lines WHERE node_id = ?1 AND "
       "boot = ?2 AND source != 'provisiond' AND (line GLOB '*ERROR*' OR line GLOB "
       "'*Kernel panic*' OR line GLOB '*Failed to *' OR line GLOB '*error:*') ORDER BY id DESC "
       "LIMIT 1"},
  };
  log->q_ = std::make_unique<Statements>();
  for (const Sql& q : all) {
    auto prepared = d.Prepare(q.text);
    if (!prepared.ok()) return prepared.status();
    (*log->q_).*q.member = std::move(*prepared);
  }
  auto last = d.QueryInt("SELECT coalesce(max(id), 0) FROM console_lines");
  if (!last.ok()) return last.status();
  log->last_id_ = *last;
  return log;
}

ConsoleLog::ConsoleLog(sql::Database db, ConsoleRetention keep) : db_(std::move(db)), keep_(keep) {}

// The statements go before the database (q_ is declared after db_).
ConsoleLog::~ConsoleLog() = default;

ConsoleBootState& ConsoleLog::BootState(int64_t node_id) {
  auto it = boots_.find(node_id);
  if (it != boots_.end()) return it->second;
  ConsoleBootState s;
  bool found = false;
  EachRow(q_->last_line.Bind(1, node_id), "the node's last line", [&](const sql::Statement& q) {
    found = true;
    s.boot = q.Int(0);
    s.past_loader = q.Text(1) != "provisiond";
  });
  if (found)
    EachRow(q_->kernel_banner.Bind(1, node_id).Bind(2, s.boot), "the boot's kernel banner",
            [&](const sql::Statement&) { s.kernel_seen = true; });
  if (boots_.size() > 100000) boots_.clear();  // bounded; read again when needed
  return boots_[node_id] = s;
}

Status ConsoleLog::Prune(int64_t node_id, int64_t boot) {
  if (keep_.boots_per_node > 0 && boot > keep_.boots_per_node) {
    Status st = q_->prune_boots.Bind(1, node_id).Bind(2, boot - keep_.boots_per_node).Run();
    q_->prune_boots.Reset();
    if (!st.ok()) return ConsoleError(st, "cannot remove old boots");
  }
  if (keep_.lines_per_node > 0) {
    Status st = q_->prune_lines.Bind(1, node_id).Bind(2, keep_.lines_per_node).Run();
    q_->prune_lines.Reset();
    if (!st.ok()) return ConsoleError(st, "cannot remove old lines");
  }
  return Status::Ok();
}

Status ConsoleLog::Append(std::vector<ConsoleLine>& lines) {
  if (lines.empty()) return Status::Ok();
  std::unique_lock lock(mu_);
  if (Status st = db_.Exec("BEGIN IMMEDIATE"); !st.ok()) return ConsoleError(st, "cannot begin");
  // Boot numbers are given only once the rows are in: a rollback must not
  // leave the counters ahead of the table.
  std::map<int64_t, ConsoleBootState> states;
  std::map<int64_t, int64_t> boot_started;  // node -> first boot number this batch started
  Status s = Status::Ok();
  for (auto& line : lines) {
    auto st = states.find(line.node_id);
    if (st == states.end()) st = states.emplace(line.node_id, BootState(line.node_id)).first;
    int64_t before = st->second.boot;
    line.boot = AssignBoot(st->second, line);
    if (line.boot != before) boot_started.emplace(line.node_id, line.boot);
    sql::Statement& insert = q_->insert;
    insert.Bind(1, line.node_id).Bind(2, line.boot).Bind(3, line.time_ms);
    insert.Bind(4, line.source).Bind(5, line.text);
    Status done = insert.Run();
    insert.Reset();
    if (!done.ok()) {
      s = ConsoleError(done, "cannot append a line");
      break;
    }
    line.id = db_.LastInsertId();
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
  if (s.ok())
    if (Status c = db_.Exec("COMMIT"); !c.ok()) s = ConsoleError(c, "cannot commit");
  if (!s.ok()) {
    if (Status r = db_.Exec("ROLLBACK"); !r.ok())
      spdlog::warn("console log: rollback after an error: {}", r.message());
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
  EachRow(q_->lines.Bind(1, node_id).Bind(2, boot).Bind(3, after).Bind(4, limit), "lines",
          [&](const sql::Statement& q) { out.push_back(ReadConsoleLine(q)); });
  return out;
}

std::vector<int64_t> ConsoleLog::Boots(int64_t node_id) {
  std::lock_guard lock(mu_);
  std::vector<int64_t> out;
  EachRow(q_->boots.Bind(1, node_id), "boots",
          [&](const sql::Statement& q) { out.push_back(q.Int(0)); });
  return out;
}

std::vector<ConsoleLine> ConsoleLog::Tail(int64_t node_id, int64_t count, ConsoleLine* error) {
  std::lock_guard lock(mu_);
  const int64_t boot = BootState(node_id).boot;
  std::vector<ConsoleLine> out;
  EachRow(q_->tail.Bind(1, node_id).Bind(2, boot).Bind(3, count), "the tail",
          [&](const sql::Statement& q) { out.insert(out.begin(), ReadConsoleLine(q)); });
  if (error) {
    *error = ConsoleLine{};
    EachRow(q_->error_line.Bind(1, node_id).Bind(2, boot), "the failing line",
            [&](const sql::Statement& q) {
              ConsoleLine found = ReadConsoleLine(q);
              bool shown = !out.empty() && found.id >= out.front().id;
              if (!shown) *error = found;
            });
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
