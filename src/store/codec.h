// JSON codecs for journal records: configuration (tenants, priority classes, nodes) and events.
// Quantities are written in exact units (GpuEq units, milliseconds), never as floating point, so
// replaying a journal restores the state exactly.
#pragma once

#include <nlohmann/json.hpp>

#include "model/events.h"

namespace gpupool {

using Json = nlohmann::json;

Json TenantToJson(const State& s, const Tenant& t);
// Builds a tenant from a record (names resolved against the state's catalogue).
Result<Tenant> TenantFromJson(const State& s, const Json& j);

Json PriorityClassToJson(const PriorityClass& pc);
Result<PriorityClass> PriorityClassFromJson(const Json& j);

Json NodeToJson(const State& s, const Node& n);
Result<Node> NodeFromJson(const State& s, const Json& j);

Json EventToJson(const Event& e);
Result<Event> EventFromJson(const Json& j);

}  // namespace gpupool
