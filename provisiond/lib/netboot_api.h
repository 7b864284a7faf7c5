// API routes of the boot network: node why, power, images, preflight.
#pragma once

#include <functional>

#include "boot.h"
#include "config.h"
#include "http.h"
#include "image_catalog.h"
#include "image_service.h"
#include "inventory.h"
#include "nfs.h"
#include "phonehome.h"
#include "power.h"

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
