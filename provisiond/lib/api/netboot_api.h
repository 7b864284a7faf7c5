// API routes of the boot network: node why, power, images, preflight.
#pragma once

#include <functional>

#include "boot/boot.h"
#include "config.h"
#include "hello/phonehome.h"
#include "http/http.h"
#include "images/image_catalog.h"
#include "images/image_service.h"
#include "images/nfs.h"
#include "power/power.h"
#include "profiles/inventory.h"

namespace prov {

struct NetbootContext {
  Inventory& inventory;
  ImageCatalog& images;
  BootService& boot;
  PhoneHome& phonehome;
  ImageService& image_service;
  NfsService* nfs;  // null without a boot network
  PowerSettings power;
  Config config;
  std::string own_address;  // our address on the cluster interface
  // Called after a hello made a node `booted` (its configuration starts).
  std::function<void(const NodeRecord&)> on_booted = nullptr;
};

void AddNetbootApiRoutes(Router& router, NetbootContext& context);

}  // namespace prov
