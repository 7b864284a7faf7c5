#include "store/boot_stage.h"

#include <doctest/doctest.h>

#include <set>
#include <string>

namespace prov {

TEST_CASE("boot stages: one list, in boot order, each name parsed back") {
  std::set<std::string> names;
  int previous = -1;
  for (BootStage s : AllBootStages()) {
    CHECK(static_cast<int>(s) == previous + 1);  // the list is the enum's order
    previous = static_cast<int>(s);
    const std::string name(ToString(s));
    CHECK_FALSE(name.empty());
    CHECK(names.insert(name).second);
    CHECK(ParseBootStage(name) == s);
  }
  CHECK(AllBootStages().front() == BootStage::kDhcp);
  CHECK(AllBootStages().back() == BootStage::kHello);
  CHECK_FALSE(ParseBootStage(""));
  CHECK_FALSE(ParseBootStage("Kernel"));
  CHECK_FALSE(ParseBootStage("kernel: lab@1"));
  CHECK(StageText(BootStage::kKernel, "lab@1") == "kernel: lab@1");
  CHECK(StageText(BootStage::kHello, "") == "hello");
}

TEST_CASE("boot stages: each loader's chain, and where a new boot begins") {
  CHECK(ChainOf(BootStage::kIpxeBinary) == BootChain::kIpxe);
  CHECK(ChainOf(BootStage::kScript) == BootChain::kIpxe);
  CHECK(ChainOf(BootStage::kShim) == BootChain::kSigned);
  CHECK(ChainOf(BootStage::kGrub) == BootChain::kSigned);
  CHECK(ChainOf(BootStage::kGrubConfig) == BootChain::kSigned);
  for (BootStage s : {BootStage::kDhcp, BootStage::kKernel, BootStage::kInitrd, BootStage::kNetwork,
                      BootStage::kOverlay, BootStage::kHello})
    CHECK(ChainOf(s) == BootChain::kAny);
  CHECK(IsLoaderStage(BootStage::kDhcp));
  CHECK(IsLoaderStage(BootStage::kScript));
  CHECK(IsLoaderStage(BootStage::kGrubConfig));
  CHECK_FALSE(IsLoaderStage(BootStage::kKernel));
  CHECK_FALSE(IsLoaderStage(BootStage::kHello));
}

TEST_CASE("the boot loaders: one per chain with stages of its own, named once") {
  CHECK(ParseLoaderName(LoaderName(kDefaultUefiChain)) == BootChain::kSigned);
  for (BootChain chain : {BootChain::kSigned, BootChain::kIpxe}) {
    INFO(LoaderName(chain));
    CHECK(ParseLoaderName(LoaderName(chain)) == chain);
    // Each loader's chain has stages only it passes.
    bool own = false;
    for (BootStage s : AllBootStages()) own |= ChainOf(s) == chain;
    CHECK(own);
  }
  CHECK(std::string(LoaderName(BootChain::kAny)).empty());
  CHECK_FALSE(ParseLoaderName(""));
  CHECK_FALSE(ParseLoaderName("shim"));
  CHECK(LoaderChoices() == "grub or ipxe");
  CHECK(LoaderChoices(true) ==
        "grub (shim and grub, signed: Secure Boot on or off) or ipxe (Secure Boot off)");
}

}  // namespace prov
