#include "http/http.h"

#include <openssl/crypto.h>

#include <algorithm>
#include <sstream>

#include "base/file_util.h"

namespace prov {

namespace {
const double kBuckets[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5};
constexpr size_t kBucketCount = sizeof(kBuckets) / sizeof(kBuckets[0]);

std::vector<std::string> SplitPath(const std::string& path) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < path.size()) {
    if (path[i] == '/') {
      ++i;
      continue;
    }
    size_t j = path.find('/', i);
    if (j == std::string::npos) j = path.size();
    out.push_back(path.substr(i, j - i));
    i = j;
  }
  return out;
}
}  // namespace

std::string HttpRequest::Header(const std::string& name) const {
  auto it = headers.find(name);
  return it == headers.end() ? "" : it->second;
}

std::string HttpRequest::Query(const std::string& name, const std::string& fallback) const {
  auto it = query.find(name);
  return it == query.end() ? fallback : it->second;
}

Result<int64_t> HttpRequest::QueryInt(const std::string& name, int64_t fallback, int64_t min,
                                      int64_t max) const {
  std::string v = Query(name);
  if (v.empty()) return fallback;
  if (v.find_first_not_of("0123456789") != std::string::npos || v.size() > 15)
    return Status::Invalid("query parameter '" + name + "' must be a number");
  int64_t n = std::stoll(v);
  if (n < min || n > max)
    return Status::Invalid("query parameter '" + name + "' must be between " + std::to_string(min) +
                           " and " + std::to_string(max));
  return n;
}

const std::string& HttpRequest::Param(const std::string& name) const {
  static const std::string empty;
  auto it = params.find(name);
  return it == params.end() ? empty : it->second;
}

HttpResponse HttpResponse::Json(int status, const nlohmann::json& body) {
  HttpResponse r;
  r.status = status;
  r.body = body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  r.body += '\n';
  return r;
}

HttpResponse HttpResponse::Error(int status, const std::string& message) {
  return Json(status, {{"error", message}});
}

HttpResponse HttpResponse::FromStatus(const Status& s) {
  return Error(HttpStatusFor(s.code()), s.message());
}

HttpResponse HttpResponse::Text(int status, std::string body, std::string type) {
  HttpResponse r;
  r.status = status;
  r.content_type = std::move(type);
  r.body = std::move(body);
  return r;
}

HttpResponse ServeFile(const HttpRequest& request, const std::string& path, uint64_t size,
                       const std::string& etag, const std::string& content_type) {
  HttpResponse r;
  r.content_type = content_type;
  r.headers = {{"ETag", etag}, {"Accept-Ranges", "bytes"}, {"Cache-Control", "no-cache"}};
  if (request.Header("if-none-match") == etag) {
    r.status = 304;
    return r;
  }
  uint64_t first = 0, last = size ? size - 1 : 0;
  std::string range = request.Header("range");
  bool partial = false;
  // A Range with a different If-Range validator gets the whole file.
  std::string if_range = request.Header("if-range");
  if (!range.empty() && (if_range.empty() || if_range == etag)) {
    // Only "bytes=A-B", "bytes=A-" and "bytes=-N"; several ranges get 200.
    bool ok = range.rfind("bytes=", 0) == 0 && range.find(',') == std::string::npos;
    std::string spec = ok ? range.substr(6) : "";
    size_t dash = spec.find('-');
    ok = ok && dash != std::string::npos;
    std::string a = ok ? spec.substr(0, dash) : "", b = ok ? spec.substr(dash + 1) : "";
    auto digits = [](const std::string& x) {
      return !x.empty() && x.size() < 19 && x.find_first_not_of("0123456789") == std::string::npos;
    };
    if (ok && digits(a) && (b.empty() || digits(b))) {
      first = std::stoull(a);
      if (!b.empty()) last = std::min<uint64_t>(std::stoull(b), size ? size - 1 : 0);
      partial = true;
      if (first >= size || (!b.empty() && std::stoull(b) < first)) {
        HttpResponse bad = HttpResponse::Error(416, "range " + range + " is outside the file");
        bad.headers.emplace_back("Content-Range", "bytes */" + std::to_string(size));
        return bad;
      }
    } else if (ok && a.empty() && digits(b)) {
      uint64_t n = std::min<uint64_t>(std::stoull(b), size);
      if (n == 0) {
        HttpResponse bad = HttpResponse::Error(416, "range " + range + " is empty");
        bad.headers.emplace_back("Content-Range", "bytes */" + std::to_string(size));
        return bad;
      }
      first = size - n;
      partial = true;
    } else if (!ok) {
      // Not a form we serve partially: the whole file, as RFC 9110 allows.
    }
  }
  r.file_path = path;
  r.file_offset = first;
  r.file_length = size ? last - first + 1 : 0;
  if (partial) {
    r.status = 206;
    r.headers.emplace_back("Content-Range", "bytes " + std::to_string(first) + "-" +
                                                std::to_string(last) + "/" + std::to_string(size));
  }
  return r;
}

int HttpStatusFor(Code code) {
  switch (code) {
    case Code::kOk:
      return 200;
    case Code::kInvalid:
      return 400;
    case Code::kUnauthorized:
      return 401;
    case Code::kForbidden:
      return 403;
    case Code::kNotFound:
      return 404;
    case Code::kConflict:
      return 409;
    case Code::kUnavailable:
      return 503;
    case Code::kInternal:
      return 500;
  }
  return 500;
}

Status CheckJsonDepth(const std::string& body, int max_depth) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < body.size(); ++i) {
    const char c = body[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth)
        return Status::Invalid("JSON nested deeper than " + std::to_string(max_depth) +
                               " levels at byte " + std::to_string(i) + " of the request body");
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return Status::Ok();
}

Result<nlohmann::json> ParseJsonObject(const std::string& body,
                                       const std::vector<std::string>& allowed) {
  if (Status d = CheckJsonDepth(body); !d.ok()) return d;
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(body);
  } catch (const nlohmann::json::parse_error& e) {
    return Status::Invalid("malformed JSON at byte " + std::to_string(e.byte) +
                           " of the request body");
  } catch (const nlohmann::json::exception& e) {
    // A number out of a double's range (1e400) and the like.
    return Status::Invalid(std::string("the request body cannot be read as JSON: ") + e.what());
  }
  if (!j.is_object()) return Status::Invalid("the request body must be a JSON object");
  for (const auto& [key, value] : j.items()) {
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
      std::string list;
      for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
      return Status::Invalid("unknown field '" + key + "' (allowed: " + list + ")");
    }
  }
  return j;
}

bool HttpRequest::FromLoopback() const {
  return remote.rfind("127.", 0) == 0 || remote == "::1" || remote.rfind("::ffff:127.", 0) == 0;
}

const char* ToString(TokenRole role) {
  switch (role) {
    case TokenRole::kRead:
      return "read";
    case TokenRole::kAdmin:
      return "admin";
    case TokenRole::kNone:
      break;
  }
  return "";
}

std::optional<TokenRole> ParseTokenRole(std::string_view text) {
  if (text == "read") return TokenRole::kRead;
  if (text == "admin") return TokenRole::kAdmin;
  return std::nullopt;
}

Result<TokenSet> TokenSet::Parse(const std::string& text, const std::string& file) {
  TokenSet set;
  std::istringstream in(text);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    size_t hash = line.find('#');
    if (hash != std::string::npos) line.resize(hash);
    std::istringstream words(line);
    std::string token, name, role, extra;
    if (!(words >> token)) continue;
    words >> name >> role;
    const std::string where = file + ":" + std::to_string(n) + ": ";
    if (words >> extra)
      return Status::Invalid(where + "expected '<token> [name [read|admin]]', found more words");
    if (token.size() < 16) return Status::Invalid(where + "token is shorter than 16 characters");
    if (role.empty()) role = "admin";
    const std::optional<TokenRole> parsed = ParseTokenRole(role);
    if (!parsed)
      return Status::Invalid(where + "unknown role '" + role + "' (expected read or admin)");
    if (name.empty()) name = "token-" + std::to_string(n);
    set.tokens_.push_back({token, {name, *parsed}});
  }
  return set;
}

Result<TokenSet> TokenSet::Load(const std::string& path) {
  auto text = ReadFile(path);
  if (!text.ok()) return text.status();
  return Parse(*text, path);
}

TokenSet::Caller TokenSet::Lookup(const std::string& token) const {
  Caller found;
  for (const Entry& e : tokens_) {
    // Constant time per candidate of the same length.
    if (e.token.size() == token.size() &&
        CRYPTO_memcmp(e.token.data(), token.data(), token.size()) == 0)
      found = e.caller;
  }
  return found;
}

std::string TokenSet::FirstWithRole(TokenRole role) const {
  for (const Entry& e : tokens_)
    if (e.caller.role == role) return e.token;
  return "";
}

void RouteMetrics::Record(const std::string& route, int status, double seconds) {
  std::lock_guard lock(mu_);
  Series& s = series_[route];
  if (s.buckets.empty()) s.buckets.assign(kBucketCount, 0);
  s.by_status[status]++;
  for (size_t i = 0; i < kBucketCount; ++i)
    if (seconds <= kBuckets[i]) s.buckets[i]++;
  s.sum += seconds;
  s.count++;
}

std::string RouteMetrics::Prometheus() const {
  std::lock_guard lock(mu_);
  std::ostringstream out;
  out << "# HELP provisiond_http_requests_total HTTP requests by route and status.\n"
         "# TYPE provisiond_http_requests_total counter\n";
  for (const auto& [route, s] : series_)
    for (const auto& [status, count] : s.by_status)
      out << "provisiond_http_requests_total{route=\"" << route << "\",status=\"" << status
          << "\"} " << count << "\n";
  out << "# HELP provisiond_http_request_duration_seconds HTTP request latency by route.\n"
         "# TYPE provisiond_http_request_duration_seconds histogram\n";
  for (const auto& [route, s] : series_) {
    for (size_t i = 0; i < kBucketCount; ++i)
      out << "provisiond_http_request_duration_seconds_bucket{route=\"" << route << "\",le=\""
          << kBuckets[i] << "\"} " << s.buckets[i] << "\n";
    out << "provisiond_http_request_duration_seconds_bucket{route=\"" << route << "\",le=\"+Inf\"} "
        << s.count << "\n";
    out << "provisiond_http_request_duration_seconds_sum{route=\"" << route << "\"} " << s.sum
        << "\n";
    out << "provisiond_http_request_duration_seconds_count{route=\"" << route << "\"} " << s.count
        << "\n";
  }
  return out.str();
}

void Router::Add(const std::string& method, const std::string& pattern, Access access,
                 Handler handler) {
  routes_.push_back({method, pattern, SplitPath(pattern), access, std::move(handler)});
}

void Router::set_tokens(std::shared_ptr<const TokenSet> tokens) {
  std::lock_guard lock(tokens_mu_);
  tokens_ = std::move(tokens);
}

Router::Match Router::Find(const std::string& method, const std::string& path) const {
  Match m;
  const std::vector<std::string> parts = SplitPath(path);
  for (const auto& route : routes_) {
    std::map<std::string, std::string> p;
    bool ok = true;
    size_t i = 0;
    for (; i < route.segments.size(); ++i) {
      const std::string& seg = route.segments[i];
      bool rest = seg.size() > 5 && seg.compare(seg.size() - 4, 4, "...}") == 0;
      if (rest) {
        if (i >= parts.size()) {
          ok = false;
          break;
        }
        std::string joined;
        for (size_t k = i; k < parts.size(); ++k) joined += (k > i ? "/" : "") + parts[k];
        p[seg.substr(1, seg.size() - 5)] = joined;
        i = parts.size();
        break;
      }
      if (i >= parts.size()) {
        ok = false;
        break;
      }
      if (seg.front() == '{' && seg.back() == '}')
        p[seg.substr(1, seg.size() - 2)] = parts[i];
      else if (seg != parts[i])
        ok = false;
      if (!ok) break;
    }
    if (!ok || i != parts.size()) continue;
    m.path_matched = true;
    if (m.allowed.find(route.method) == std::string::npos)
      m.allowed +=
          (m.allowed.empty() ? "" : ", ") + route.method + (route.method == "GET" ? ", HEAD" : "");
    if (route.method == method || (route.method == "GET" && method == "HEAD")) {
      m.route = &route;
      m.params = std::move(p);
      return m;
    }
  }
  return m;
}

HttpResponse Router::Handle(HttpRequest& request) const {
  return Handle(request, Find(request.method, request.path));
}

HttpResponse Router::Handle(HttpRequest& request, Match found) const {
  auto start = std::chrono::steady_clock::now();
  const Route* match = found.route;
  const bool path_matched = found.path_matched;
  const std::string& allowed = found.allowed;
  auto& params = found.params;

  HttpResponse response;
  std::string route_name = match ? match->method + " " + match->pattern : "unmatched";
  if (!match) {
    response = path_matched
                   ? HttpResponse::Error(405, "method " + request.method + " is not allowed on " +
                                                  request.path + " (allowed: " + allowed + ")")
                   : HttpResponse::Error(404, "no such path: " + request.path);
    if (path_matched) response.headers.emplace_back("Allow", allowed);
  } else {
    request.params = std::move(params);
    std::string auth = request.Header("authorization");
    std::string token;
    if (auth.rfind("Bearer ", 0) == 0) token = auth.substr(7);
    if (!token.empty() && match->access != Access::kOpen) {
      std::shared_ptr<const TokenSet> tokens;
      {
        std::lock_guard lock(tokens_mu_);
        tokens = tokens_;
      }
      if (tokens) {
        TokenSet::Caller caller = tokens->Lookup(token);
        request.who = std::move(caller.name);
        if (!request.who.empty()) request.role = caller.role;
      }
    }
    if (match->access != Access::kOpen && !request.tls && !request.FromLoopback()) {
      response = HttpResponse::Error(
          403,
          "the API answers over plain HTTP only on loopback; use the HTTPS listener "
          "(api_listen: https://<control node>:8443 by default)");
    } else if (match->access != Access::kOpen && request.who.empty()) {
      response = HttpResponse::Error(
          401, token.empty() ? "this request needs a bearer token (Authorization: Bearer <token>; "
                               "provisionctl reads it from PROVISIOND_TOKEN or --token-file)"
                             : "the bearer token is not valid");
      response.headers.emplace_back("WWW-Authenticate", "Bearer");
    } else if (match->access == Access::kAdmin && request.role != TokenRole::kAdmin) {
      response =
          HttpResponse::Error(403, "token '" + request.who + "' has the role '" +
                                       ToString(request.role) + "'; this request needs 'admin'");
    } else {
      try {
        response = match->handler(request);
      } catch (const std::exception& e) {
        response = HttpResponse::Error(500, std::string("internal error: ") + e.what());
      }
    }
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  metrics_.Record(route_name, response.status, seconds);
  return response;
}

std::string UrlDecode(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+') {
      out += ' ';
    } else if (s[i] == '%' && i + 2 < s.size() && isxdigit(static_cast<unsigned char>(s[i + 1])) &&
               isxdigit(static_cast<unsigned char>(s[i + 2]))) {
      out += static_cast<char>(std::stoi(s.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

void SplitTarget(const std::string& target, std::string& path,
                 std::map<std::string, std::string>& query) {
  size_t q = target.find('?');
  path = target.substr(0, q);
  if (q == std::string::npos) return;
  std::string rest = target.substr(q + 1);
  size_t i = 0;
  while (i <= rest.size()) {
    size_t amp = rest.find('&', i);
    if (amp == std::string::npos) amp = rest.size();
    std::string pair = rest.substr(i, amp - i);
    if (!pair.empty()) {
      size_t eq = pair.find('=');
      query[UrlDecode(pair.substr(0, eq))] =
          eq == std::string::npos ? "" : UrlDecode(pair.substr(eq + 1));
    }
    i = amp + 1;
  }
}

}  // namespace prov
