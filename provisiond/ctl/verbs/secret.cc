// provisionctl secret: the secrets store (names and sizes out, values only in).
#include <CLI/CLI.hpp>

#include <fstream>
#include <iterator>
#include <ostream>

#include "base/file_util.h"
#include "common.h"
#include "table.h"

namespace prov::ctl {
namespace {

using json = nlohmann::json;

int ListSecretsVerb(Context& ctx, const Args& a) {
  auto r = ctx.client.Get(kApi + "/secrets");
  if (!r.ok()) return Fail(ctx, r.status());
  if (a.json) {
    PrintJson(ctx, *r);
    return kExitOk;
  }
  if ((*r)["secrets"].empty()) {
    ctx.out << "no secrets (a profile declares them under 'secrets:')\n";
    return kExitOk;
  }
  ctx.out << "NAME                 STORED  BYTES  GENERATE     DECLARED BY\n";
  for (const auto& s : (*r)["secrets"]) {
    std::string by;
    for (const auto& v : s["declared_by"]) by += (by.empty() ? "" : ",") + v.get<std::string>();
    char line[256];
    std::snprintf(line, sizeof line, "%-20s %-7s %5s  %-12s %s\n",
                  s["name"].get<std::string>().c_str(), s["stored"].get<bool>() ? "yes" : "no",
                  s.contains("bytes") ? std::to_string(s["bytes"].get<int64_t>()).c_str() : "-",
                  s.value("generate", std::string("(operator)")).c_str(),
                  by.empty() ? "-" : by.c_str());
    ctx.out << line;
  }
  return kExitOk;
}

int SetSecretVerb(Context& ctx, const Args& a) {
  std::string value;
  if (!a.from_file.empty() && a.from_file != "-") {
    auto text = ReadFile(a.from_file);
    if (!text.ok()) return Fail(ctx, text.status());
    value = std::move(*text);
  } else {
    value.assign(std::istreambuf_iterator<char>(ctx.in), std::istreambuf_iterator<char>());
  }
  json body = {{"value", value}};
  auto r = ctx.client.Call("PUT", kApi + "/secrets/" + UrlEncode(a.target), &body);
  if (!r.ok()) return Fail(ctx, r.status());
  ctx.out << "secret " << a.target << " stored (" << value.size() << " bytes)\n";
  return kExitOk;
}

int RemoveSecretVerb(Context& ctx, const Args& a) {
  auto r = ctx.client.Delete(kApi + "/secrets/" + UrlEncode(a.target));
  if (!r.ok()) return Fail(ctx, r.status());
  ctx.out << "secret " << a.target << " removed\n";
  return kExitOk;
}

}  // namespace

std::vector<Verb> SecretVerbs() {
  return {
      {"secret list", "secret list [--json]",
       "List the secrets: stored or not, their size, which profiles declare them",
       R"(Lists the secrets provisiond keeps for profiles (a MUNGE key, a cluster SSH key
pair, passwords): whether each is stored yet, its size, how a profile makes it
and which profiles declare it. Values are never shown: no API answer carries one.
A declared secret is made on first use (the first configure run that needs it).

Examples:
  provisionctl secret list)",
       [](CLI::App& c, Args& a) { AddJsonFlag(c, a); }, ListSecretsVerb},
      {"secret set", "secret set NAME [--from-file FILE]",
       "Store your own value for a secret (from a file, or standard input)",
       R"(Stores NAME's value in provisiond's secrets store (a file 0600 under its data
directory), replacing one made before. The value is read from FILE, or from
standard input when no file (or '-') is given; it is sent once and never shown.

Examples:
  provisionctl secret set munge_key --from-file munge.key.b64
  head -c 1024 /dev/urandom | base64 -w0 | provisionctl secret set munge_key)",
       [](CLI::App& c, Args& a) {
         c.add_option("name", a.target, "The secret's name")->type_name("NAME")->required();
         c.add_option("--from-file", a.from_file, "Read the value from FILE ('-': stdin)")
             ->type_name("FILE");
       },
       SetSecretVerb},
      {"secret rm", "secret rm NAME", "Remove a secret (a declaring profile makes a new one)",
       R"(Removes NAME from the secrets store. A profile that declares it with 'generate'
makes a new value on its next configure run (nodes then get the new one).

Examples:
  provisionctl secret rm cluster_key)",
       [](CLI::App& c, Args& a) {
         c.add_option("name", a.target, "The secret's name")->type_name("NAME")->required();
       },
       RemoveSecretVerb},
  };
}

}  // namespace prov::ctl
