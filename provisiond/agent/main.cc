// provision-facts: prints this machine's facts as JSON (the phone-home body).
// Built statically so it runs in any image. Usage: provision-facts [ROOT]
#include <cstdio>
#include <iostream>

#include "facts.h"

int main(int argc, char** argv) {
  std::string root = argc > 1 ? argv[1] : "";
  std::cout << prov::agent::CollectFacts(root).dump() << "\n";
  return 0;
}
