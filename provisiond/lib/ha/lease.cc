#include "ha/lease.h"

#include <spdlog/spdlog.h>

namespace prov {
namespace {

// The database's clock, in unix milliseconds (a lease is PostgreSQL's only).
const char* const kNowMs = sql::NowMsSql(sql::Dialect::kPostgres);

// Take when free or lapsed, renew when ours; a takeover moves the epoch and
// the start of the tenure. No row back: another holds it.
const std::string kTake = std::string("WITH now AS (SELECT ") + kNowMs +
                          " AS ms) INSERT INTO control_lease (name, holder, epoch, since, expires) "
                          "SELECT 'active', ?1, 1, ms, ms + ?2 FROM now "
                          "ON CONFLICT (name) DO UPDATE SET "
                          "epoch = CASE WHEN control_lease.holder = excluded.holder THEN "
                          "control_lease.epoch ELSE control_lease.epoch + 1 END, "
                          "since = CASE WHEN control_lease.holder = excluded.holder THEN "
                          "control_lease.since ELSE excluded.since END, "
                          "holder = excluded.holder, expires = excluded.expires "
                          "WHERE control_lease.holder = excluded.holder OR "
                          "control_lease.expires < excluded.since "
                          "RETURNING holder, epoch, since, expires";

const std::string kRead = std::string("SELECT holder, epoch, since, expires, ") + kNowMs +
                          " FROM control_lease WHERE name = 'active' UNION ALL SELECT '', 0, 0, "
                          "0, " +
                          kNowMs + " WHERE NOT EXISTS (SELECT 1 FROM control_lease)";

}  // namespace

Status CheckLeaseTimings(const LeaseSettings& s) {
  if (s.stop_margin_ms < 1000)
    return Status::Invalid("control.stop_margin_ms (" + std::to_string(s.stop_margin_ms) +
                           ") must be at least 1000: the time an active has to stop serving");
  if (s.renew_ms < 100) return Status::Invalid("control.renew_ms must be at least 100");
  if (2 * s.renew_ms + s.stop_margin_ms > s.lease_ms)
    return Status::Invalid("control.lease_ms (" + std::to_string(s.lease_ms) +
                           ") must be at least 2 x control.renew_ms + control.stop_margin_ms (" +
                           std::to_string(2 * s.renew_ms + s.stop_margin_ms) +
                           "): two renewals must fit before the active gives up");
  return Status::Ok();
}

Result<std::unique_ptr<ControlLease>> ControlLease::Open(const LeaseSettings& settings) {
  if (!sql::IsPostgresUri(settings.database))
    return Status::Invalid("a control lease needs a PostgreSQL database");
  if (Status s = CheckLeaseTimings(settings); !s.ok()) return s;
  auto db = sql::Database::Open(settings.database, sql::Database::Mode::kReadWrite);
  if (!db.ok()) return db.status();
  auto take = db->Prepare(kTake);
  if (!take.ok()) return take.status();
  auto read = db->Prepare(kRead);
  if (!read.ok()) return read.status();
  return std::unique_ptr<ControlLease>(
      new ControlLease(settings, std::move(*db), std::move(*take), std::move(*read)));
}

ControlLease::ControlLease(LeaseSettings settings, sql::Database db, sql::Statement take,
                           sql::Statement read)
    : settings_(std::move(settings)),
      db_(std::move(db)),
      take_(std::move(take)),
      read_(std::move(read)) {}

ControlLease::~ControlLease() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (renewer_.joinable()) renewer_.join();
  if (watchdog_.joinable()) watchdog_.join();
  // The statements before their connection.
  take_ = sql::Statement();
  read_ = sql::Statement();
}

Result<bool> ControlLease::TryTake() {
  std::lock_guard db_lock(db_mu_);
  const auto sent = std::chrono::steady_clock::now();
  take_.Bind(1, settings_.holder).Bind(2, settings_.lease_ms);
  auto row = take_.Step("control lease: cannot take or renew");
  if (!row.ok() || !*row) {
    take_.Reset();
    if (!row.ok()) return row.status();
    return false;
  }
  std::lock_guard lock(mu_);
  tenure_.holder = take_.Text(0);
  tenure_.epoch = take_.Int(1);
  tenure_.since_ms = take_.Int(2);
  tenure_.expires_ms = take_.Int(3);
  take_.Reset();
  deadline_ = sent + std::chrono::milliseconds(settings_.lease_ms - settings_.stop_margin_ms);
  return true;
}

Result<LeaseState> ControlLease::Read() {
  std::lock_guard db_lock(db_mu_);
  auto row = read_.Step("control lease: cannot read");
  Result<LeaseState> out = Status::Internal("control lease: no row");
  if (!row.ok()) out = row.status();
  if (row.ok() && *row)
    out = LeaseState{read_.Text(0), read_.Int(1), read_.Int(2), read_.Int(3), read_.Int(4)};
  read_.Reset();
  return out;
}

Result<bool> ControlLease::AwaitActive(const std::function<bool()>& stop,
                                       const std::function<void(const LeaseState&)>& standby) {
  std::string seen;
  for (;;) {
    auto taken = TryTake();
    if (taken.ok() && *taken) return true;
    if (!taken.ok()) {
      spdlog::warn("{}", taken.status().message());
    } else if (auto state = Read(); state.ok() && state->holder != seen) {
      seen = state->holder;
      standby(*state);
    }
    // A standby asks as often as the active renews: it takes over at most
    // renew_ms after the lease lapsed.
    std::unique_lock lock(mu_);
    if (cv_.wait_for(lock, std::chrono::milliseconds(settings_.renew_ms), [&] { return stop_; }) ||
        stop())
      return false;
  }
}

void ControlLease::KeepActive(std::function<void(const std::string& why)> fence) {
  renewer_ = std::thread([this] { RenewLoop(); });
  watchdog_ = std::thread([this, fence = std::move(fence)] { WatchLoop(fence); });
}

void ControlLease::RenewLoop() {
  std::unique_lock lock(mu_);
  while (
      !cv_.wait_for(lock, std::chrono::milliseconds(settings_.renew_ms), [&] { return stop_; })) {
    lock.unlock();
    auto renewed = TryTake();
    lock.lock();
    if (!renewed.ok()) {
      last_error_ = renewed.status().message();
      spdlog::warn("{}", last_error_);
    } else if (!*renewed) {
      last_error_ = "another control node holds the lease";
    }
  }
}

void ControlLease::WatchLoop(const std::function<void(const std::string&)>& fence) {
  std::unique_lock lock(mu_);
  // Woken often enough to stop within a tenth of the margin of the deadline.
  const auto tick = std::chrono::milliseconds(std::max<int64_t>(settings_.stop_margin_ms / 10, 10));
  while (!cv_.wait_for(lock, tick, [&] { return stop_; })) {
    if (std::chrono::steady_clock::now() < deadline_) continue;
    const std::string why = "no renewal of the control lease for " +
                            std::to_string(settings_.lease_ms - settings_.stop_margin_ms) + " ms" +
                            (last_error_.empty() ? "" : " (" + last_error_ + ")");
    lock.unlock();
    fence(why);
    return;
  }
}

Status ControlLease::Report(const ControlNodeReport& report) {
  std::lock_guard db_lock(db_mu_);
  return WriteControlNode(db_, report);
}

Result<std::vector<ControlNodeReport>> ControlLease::ControlNodes() {
  std::lock_guard db_lock(db_mu_);
  return ReadControlNodes(db_);
}

LeaseState ControlLease::tenure() const {
  std::lock_guard lock(mu_);
  return tenure_;
}

}  // namespace prov
