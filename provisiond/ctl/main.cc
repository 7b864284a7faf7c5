// provisionctl: the command line of provisiond. Everything but the process's
// own setup lives in cli.cc (the command line, from the verb table, verb.h)
// and verbs/<noun>.cc (each noun's verbs with their help text).
#include <unistd.h>

#include <iostream>

#include "cli.h"
#include "client.h"

int main(int argc, char** argv) {
  prov::ctl::CurlGlobal curl;
  return prov::ctl::RunCli(argc, argv, {std::cin, std::cout, std::cerr, isatty(STDIN_FILENO) == 1});
}
