// bench_store_events: how many one-event transactions per second go through
// prov::Store (Transact + StoreTx::AppendEvent, the way the daemon records
// history), next to a raw sqlite3 loop on the same schema, pragmas and open
// flags, measured in the same run. The rounds alternate which side goes first
// so that drift (page cache, CPU frequency, other load) falls on both.
//
//   bench_store_events [--events N] [--rounds R] [--dir DIR] [--json FILE]
//
// Every run writes to a fresh database file in a mkdtemp(3) directory under
// DIR (default $TMPDIR or /tmp), which is removed at the end (also when a run
// fails). Both sides commit to the same file system, so its fsync behaviour
// (WAL checkpoints) weighs on both; a tmpfs DIR leaves the CPU cost alone.
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "store/store.h"

namespace {

using Clock = std::chrono::steady_clock;

// The event both sides write: a boot-stage report about one enrolled node,
// the most frequent write of a provisioning run.
constexpr const char* kEventNode = "node00000";
constexpr const char* kEventKind = "stage";
constexpr const char* kEventDetail = "installer: partitioning /dev/nvme0n1";
constexpr const char* kEventWho = "node";

struct SqliteCloser {
  void operator()(sqlite3* db) const { sqlite3_close(db); }
};
struct StmtFinalizer {
  void operator()(sqlite3_stmt* s) const { sqlite3_finalize(s); }
};
using SqliteDb = std::unique_ptr<sqlite3, SqliteCloser>;
using SqliteStmt = std::unique_ptr<sqlite3_stmt, StmtFinalizer>;

// Removes the mkdtemp directory when the benchmark ends, however it ends.
class TempDir {
 public:
  static prov::Result<TempDir> Create(const std::string& parent) {
    std::string base = parent + "/bench-store-events-XXXXXX";
    std::vector<char> buf(base.begin(), base.end());
    buf.push_back('\0');
    if (!mkdtemp(buf.data())) return prov::Status::Internal("mkdtemp " + base + " failed");
    return TempDir(buf.data());
  }
  TempDir(TempDir&& other) noexcept : path_(std::move(other.path_)) { other.path_.clear(); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  TempDir& operator=(TempDir&&) = delete;
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  explicit TempDir(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

// Creates `path` the way the daemon does (Store::Open: pragmas, migrations)
// with one enrolled node for the events to refer to; returns the node's id.
prov::Result<int64_t> CreateDatabase(const std::string& path, std::unique_ptr<prov::Store>* keep) {
  auto store = prov::Store::Open(path);
  if (!store.ok()) return store.status();
  int64_t node_id = 0;
  prov::Status s = (*store)->Transact([&](prov::StoreTx& tx) -> prov::Status {
    prov::NodeRecord node;
    node.hostname = kEventNode;
    node.mac = "52:54:00:00:00:00";
    node.state = prov::NodeState::kEnrolled;
    auto inserted = tx.InsertNode(node);
    if (!inserted.ok()) return inserted.status();
    node_id = inserted->id;
    return prov::Status::Ok();
  });
  if (!s.ok()) return s;
  if (keep) *keep = std::move(*store);
  return node_id;
}

prov::Status CheckEventCount(sqlite3* db, int64_t want, const std::string& path) {
  sqlite3_stmt* raw = nullptr;
  if (sqlite3_prepare_v2(db, "SELECT count(*) FROM events", -1, &raw, nullptr) != SQLITE_OK)
    return prov::Status::Internal(path + ": " + sqlite3_errmsg(db));
  SqliteStmt s(raw);
  int64_t got = sqlite3_step(s.get()) == SQLITE_ROW ? sqlite3_column_int64(s.get(), 0) : -1;
  if (got != want)
    return prov::Status::Internal(path + ": expected " + std::to_string(want) +
                                  " events after the run, found " + std::to_string(got));
  return prov::Status::Ok();
}

// The daemon's path: one Store::Transact per event, AppendEvent inside.
prov::Result<double> RunStore(const std::string& path, int64_t events) {
  std::unique_ptr<prov::Store> store;
  auto node_id = CreateDatabase(path, &store);
  if (!node_id.ok()) return node_id.status();
  auto start = Clock::now();
  for (int64_t i = 0; i < events; ++i) {
    prov::Status s = store->Transact([&](prov::StoreTx& tx) {
      prov::EventRecord e{0, 0, *node_id, kEventNode, kEventKind, kEventDetail, kEventWho};
      return tx.AppendEvent(e);
    });
    if (!s.ok()) return prov::Status::Internal("event " + std::to_string(i) + ": " + s.message());
  }
  double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  store.reset();
  // Count through a separate connection: what was committed, not what one
  // connection believes.
  sqlite3* raw = nullptr;
  if (sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    SqliteDb close(raw);
    return prov::Status::Internal("cannot reopen " + path);
  }
  SqliteDb db(raw);
  prov::Status c = CheckEventCount(db.get(), events, path);
  if (!c.ok()) return c;
  return seconds;
}

prov::Status Exec(sqlite3* db, const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = std::string(sql) + ": " + (err ? err : "error");
    sqlite3_free(err);
    return prov::Status::Internal(msg);
  }
  return prov::Status::Ok();
}

prov::Result<SqliteStmt> Prepare(sqlite3* db, const char* sql) {
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &s, nullptr) != SQLITE_OK)
    return prov::Status::Internal(std::string("prepare '") + sql + "': " + sqlite3_errmsg(db));
  return SqliteStmt(s);
}

prov::Status Step(sqlite3* db, sqlite3_stmt* s, const char* what) {
  int rc = sqlite3_step(s);
  sqlite3_reset(s);
  if (rc != SQLITE_DONE)
    return prov::Status::Internal(std::string(what) + ": " + sqlite3_errmsg(db));
  return prov::Status::Ok();
}

// The peer: a fresh file created the same way (Store::Open, then closed), the
// same open flags and pragmas as Store::Open, and a plain loop of prepared
// BEGIN IMMEDIATE / INSERT / COMMIT statements.
prov::Result<double> RunRaw(const std::string& path, int64_t events) {
  auto node_id = CreateDatabase(path, nullptr);
  if (!node_id.ok()) return node_id.status();
  sqlite3* raw = nullptr;
  int rc =
      sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_FULLMUTEX, nullptr);
  SqliteDb db(raw);
  if (rc != SQLITE_OK) return prov::Status::Internal("cannot open " + path);
  for (const char* pragma : {"PRAGMA journal_mode = WAL", "PRAGMA synchronous = NORMAL",
                             "PRAGMA busy_timeout = 5000", "PRAGMA foreign_keys = ON"}) {
    prov::Status s = Exec(db.get(), pragma);
    if (!s.ok()) return s;
  }
  auto begin = Prepare(db.get(), "BEGIN IMMEDIATE");
  auto commit = Prepare(db.get(), "COMMIT");
  auto insert = Prepare(db.get(),
                        "INSERT INTO events (time, node_id, node, kind, detail, who) "
                        "VALUES (?1, ?2, ?3, ?4, ?5, ?6)");
  for (auto* p : {&begin, &commit, &insert})
    if (!p->ok()) return p->status();
  sqlite3_stmt* ins = insert->get();
  auto start = Clock::now();
  for (int64_t i = 0; i < events; ++i) {
    prov::Status s = Step(db.get(), begin->get(), "BEGIN IMMEDIATE");
    if (!s.ok()) return s;
    sqlite3_bind_int64(ins, 1, prov::NowMs());
    sqlite3_bind_int64(ins, 2, *node_id);
    sqlite3_bind_text(ins, 3, kEventNode, -1, SQLITE_STATIC);
    sqlite3_bind_text(ins, 4, kEventKind, -1, SQLITE_STATIC);
    sqlite3_bind_text(ins, 5, kEventDetail, -1, SQLITE_STATIC);
    sqlite3_bind_text(ins, 6, kEventWho, -1, SQLITE_STATIC);
    s = Step(db.get(), ins, "INSERT");
    if (!s.ok()) return s;
    s = Step(db.get(), commit->get(), "COMMIT");
    if (!s.ok()) return s;
  }
  double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  prov::Status c = CheckEventCount(db.get(), events, path);
  if (!c.ok()) return c;
  return seconds;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::string UtcNow() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// The 1, 5 and 15 minute load averages: other work on the machine shows
// here, and it changes what a run measures.
std::string LoadAverage() {
  std::ifstream f("/proc/loadavg");
  std::string one, five, fifteen;
  if (!(f >> one >> five >> fifteen)) return "unknown";
  return one + " " + five + " " + fifteen;
}

std::string DefaultJsonPath() {
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  auto dir = ec ? std::filesystem::current_path() : exe.parent_path();
  return (dir / "bench_store_events.json").string();
}

bool ParseCount(const char* text, int64_t min, int64_t max, int64_t& out) {
  char* end = nullptr;
  long long v = std::strtoll(text, &end, 10);
  if (!*text || *end || v < min || v > max) return false;
  out = v;
  return true;
}

int Usage(const char* argv0) {
  std::cerr << "usage: " << argv0 << " [--events N] [--rounds R] [--dir DIR] [--json FILE]\n"
            << "  --events N   events per run, one transaction each (default 20000)\n"
            << "  --rounds R   rounds; each runs the store and the raw loop once (default 5)\n"
            << "  --dir DIR    where the temporary databases go (default: $TMPDIR or /tmp)\n"
            << "  --json FILE  machine-readable results (default: bench_store_events.json\n"
            << "               beside this executable)\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  int64_t events = 20000, rounds = 5;
  std::string json_path, parent = std::filesystem::temp_directory_path().string();
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    bool has_value = i + 1 < argc;
    if (arg == "--events" && has_value) {
      if (!ParseCount(argv[++i], 1, 100000000, events)) return Usage(argv[0]);
    } else if (arg == "--rounds" && has_value) {
      if (!ParseCount(argv[++i], 1, 100, rounds)) return Usage(argv[0]);
    } else if (arg == "--dir" && has_value) {
      parent = argv[++i];
    } else if (arg == "--json" && has_value) {
      json_path = argv[++i];
    } else {
      return Usage(argv[0]);
    }
  }
  if (json_path.empty()) json_path = DefaultJsonPath();

  const std::string load_before = LoadAverage();
  auto dir = TempDir::Create(parent);
  if (!dir.ok()) {
    std::cerr << dir.status().message() << "\n";
    return 1;
  }
  std::vector<double> store_rate, raw_rate;
  std::vector<std::string> first;
  for (int64_t r = 0; r < rounds; ++r) {
    bool store_first = r % 2 == 0;
    first.push_back(store_first ? "store" : "raw");
    for (int side = 0; side < 2; ++side) {
      bool is_store = (side == 0) == store_first;
      std::string path =
          dir->path() + "/" + (is_store ? "store" : "raw") + "-" + std::to_string(r) + ".db";
      auto seconds = is_store ? RunStore(path, events) : RunRaw(path, events);
      if (!seconds.ok()) {
        std::cerr << "bench_store_events: " << seconds.status().message() << "\n";
        return 1;
      }
      (is_store ? store_rate : raw_rate).push_back(static_cast<double>(events) / *seconds);
      // Each run's files go as soon as it is measured: the next run starts
      // from the same disk usage.
      std::error_code ec;
      for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path + suffix, ec);
    }
  }
  double store_median = Median(store_rate), raw_median = Median(raw_rate);
  double ratio = store_median / raw_median;
  // Within a round the two runs are seconds apart, so their ratio is less
  // exposed to slow drift than the ratio of the medians.
  std::vector<double> round_ratio;
  for (int64_t r = 0; r < rounds; ++r) round_ratio.push_back(store_rate[r] / raw_rate[r]);
  double round_ratio_median = Median(round_ratio);
  unsigned cpus = std::thread::hardware_concurrency();

  std::printf("bench_store_events: %lld events per run, one per transaction, %lld rounds\n",
              static_cast<long long>(events), static_cast<long long>(rounds));
  std::printf("SQLite %s, %u CPUs, load average %s at start, databases under %s\n",
              sqlite3_libversion(), cpus, load_before.c_str(), parent.c_str());
  std::printf("%-7s %-7s %14s %14s %11s\n", "round", "first", "store rows/s", "raw rows/s",
              "store/raw");
  for (int64_t r = 0; r < rounds; ++r)
    std::printf("%-7lld %-7s %14.0f %14.0f %11.3f\n", static_cast<long long>(r + 1),
                first[r].c_str(), store_rate[r], raw_rate[r], round_ratio[r]);
  std::printf("%-15s %14.0f %14.0f %11.3f\n", "median", store_median, raw_median,
              round_ratio_median);
  std::printf("ratio store/raw (medians): %.3f\n", ratio);

  char host[256] = {};
  gethostname(host, sizeof host - 1);
  nlohmann::json out = {
      {"benchmark", "store_events"},
      {"date", UtcNow()},
      {"machine", {{"hostname", host}, {"cpus", cpus}, {"loadavg_at_start", load_before}}},
      {"sqlite_version", sqlite3_libversion()},
      {"events_per_run", events},
      {"rounds", rounds},
      {"first_per_round", first},
      {"store", {{"rows_per_s", store_rate}, {"median_rows_per_s", store_median}}},
      {"raw_sqlite", {{"rows_per_s", raw_rate}, {"median_rows_per_s", raw_median}}},
      {"databases_under", parent},
      {"ratio_store_over_raw", ratio},
      {"ratio_per_round", round_ratio},
      {"median_ratio_per_round", round_ratio_median}};
  std::ofstream f(json_path);
  f << out.dump(2) << "\n";
  f.close();
  if (!f) {
    std::cerr << "bench_store_events: cannot write " << json_path << "\n";
    return 1;
  }
  std::printf("results: %s\n", json_path.c_str());
  return 0;
}
