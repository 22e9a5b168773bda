// The bodies of POST /v1/tenants and PATCH /v1/tenants/{name} (src/api/decode.h) from
// `gpupool create tenant` and `gpupool edit tenant`. Pure; errors are kInvalidArgument (usage
// errors, exit 2). Names, flavors and ranges are the server's to judge.
//
// Flags (create and edit):
//   --weight W                                  the tenant's share of idle capacity
//   --quota FLAVOR=G[,borrow=B][,lend=L]        repeatable; B and L may be "none" (no limit);
//                                               FLAVOR=none removes the flavor's quota (edit)
//   --limit KEY=VALUE                           repeatable: max-replicas=N, max-job-gpus=G,
//                                               default-duration=D, max-duration=D (2h, 3600);
//                                               0 or none is no limit
//   --allow-gpu-cotenancy true|false            may share time-sliced GPUs with other tenants
// PATCH replaces the whole quotas map, so an edit's --quota flags are applied to the tenant's
// current quotas (GET) and the whole map is sent.
#pragma once

#include "cli/args.h"
#include "cli/client.h"

namespace gpupool::cli {

// Does the command line hold any of the flags above?
bool HasTenantFieldFlags(const Args& args);

// The fields the flags set. `current` is the tenant as GET /v1/tenants/{name} shows it (an
// edit), or nullptr (a create: --quota FLAVOR=none is then an error).
Result<Json> TenantFieldsFromArgs(const Args& args, const Json* current);

// A tenant body from YAML text (-f): the fields of the JSON body; `name` stays a string.
Result<Json> TenantRequestFromYaml(const std::string& yaml_text);

// The fields of a tenant one may change, from its GET view: name, weight, quotas, limits,
// allow_gpu_cotenancy. What `edit tenant` hands $EDITOR, as YAML.
Json EditableTenant(const Json& view);

// The PATCH that takes `before` (EditableTenant) to `after` (what came back from the editor):
// the top-level fields that differ, with a limit left out of `after` sent as 0 (no limit). An
// empty object when nothing changed. `after` must be an object.
Result<Json> TenantPatch(const Json& before, const Json& after);

}  // namespace gpupool::cli
