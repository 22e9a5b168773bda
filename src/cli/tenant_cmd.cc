// `gpupool create tenant` and `gpupool edit tenant`: tenants from flags, from a YAML file, or
// edited in $EDITOR as kubectl edit does (tenant_request.h builds the bodies).
#include "cli/tenant_cmd.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "api/url.h"
#include "cli/commands.h"
#include "cli/tenant_request.h"

namespace gpupool::cli {

const char* const kEditUsage =
    "usage: gpupool edit tenant NAME [--weight W] [--quota FLAVOR=G[,borrow=B][,lend=L]]...\n"
    "         [--limit KEY=VALUE]... [--allow-gpu-cotenancy true|false]   (admins)\n"
    "       gpupool edit tenant NAME -f PATCH.yaml   (fields to change, as PATCH /v1/tenants/NAME)\n"
    "       gpupool edit tenant NAME                 (opens $VISUAL or $EDITOR, else vi)\n"
    "  --quota sets one flavor's quota and keeps the others (FLAVOR=none removes it); --limit sets\n"
    "  one limit (max-replicas, max-job-gpus, default-duration, max-duration; none: no limit).\n"
    "  In the editor: change the fields and save; what changed is sent. A limit deleted from the\n"
    "  file means no limit, a flavor deleted from quotas loses its quota; an unchanged or empty\n"
    "  file sends nothing. If the server refuses, the edited file is kept and its path printed.\n"
    "  In a PATCH file, quotas replaces the whole map.\n";

namespace {

constexpr const char* kEditHeader =
    "# Edit the tenant and save; what changed is sent (PATCH /v1/tenants/NAME). An unchanged or\n"
    "# empty file sends nothing. GPU amounts are in GPUs, durations in seconds; a limit deleted\n"
    "# here means no limit, a flavor deleted from quotas loses its quota.\n";

// Runs `editor` on `path` through the shell (EDITOR may hold flags: "code --wait").
Status RunEditor(const std::string& editor, const std::string& path) {
  const pid_t pid = fork();
  if (pid < 0) return Error{ErrorCode::kInternal, "cannot start the editor"};
  if (pid == 0) {
    const std::string line = editor + " \"$1\"";
    execl("/bin/sh", "sh", "-c", line.c_str(), "sh", path.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return Error{ErrorCode::kInternal, "the editor (" + editor + ") failed; nothing was sent"};
  }
  return Ok();
}

std::string Editor() {
  for (const char* name : {"VISUAL", "EDITOR"}) {
    const char* v = std::getenv(name);
    if (v != nullptr && *v != '\0') return v;
  }
  return "vi";
}

// The tenant as YAML in $EDITOR; the PATCH of what changed, or an empty object for none.
// `file` is set to the edited file, which the caller removes once the PATCH is accepted.
Result<Json> EditInEditor(const Json& view, std::string* file) {
  const Json before = EditableTenant(view);
  std::error_code ec;
  std::string name = (std::filesystem::temp_directory_path(ec) / "gpupool-edit-XXXXXX.yaml").string();
  const int fd = mkstemps(name.data(), 5);
  if (fd < 0) return Error{ErrorCode::kInternal, "cannot create a temporary file"};
  close(fd);
  *file = name;
  std::ofstream(*file) << kEditHeader << ToYaml(before);
  GP_RETURN_IF_ERROR(RunEditor(Editor(), *file));
  Result<std::string> text = ReadTextFile(*file);
  if (!text.ok()) return text.error();
  if (text->find_first_not_of(" \t\r\n") == std::string::npos) return Json::object();
  Result<Json> after = TenantRequestFromYaml(*text);
  if (!after.ok()) return InvalidArgument(*file + ": " + after.error().message);
  return TenantPatch(before, *after);
}

// The PATCH an edit sends: from -f, from the flags, or from the editor (`edited` is then the
// file). An empty object: nothing to send.
Result<Json> EditPatch(Invocation& inv, const std::string& path, std::string* edited) {
  const Args& args = inv.args();
  if (args.Has("file")) {
    Result<std::string> text = ReadTextFile(args.Str("file", ""));
    if (!text.ok()) return text.error();
    Result<Json> body = TenantRequestFromYaml(*text);
    if (!body.ok()) return InvalidArgument(args.Str("file", "") + ": " + body.error().message);
    return body;
  }
  Result<Json> current = inv.api().Get(path);
  if (!current.ok()) return current.error();
  if (HasTenantFieldFlags(args)) return TenantFieldsFromArgs(args, &*current);
  return EditInEditor(*current, edited);
}

}  // namespace

int CreateTenant(Invocation& inv) {
  const Args& args = inv.args();
  for (const char* f : {"role", "tenant"}) {
    if (args.Has(f)) return inv.Usage(std::string("--") + f + " is for tokens");
  }
  Result<Json> body = InvalidArgument("");
  if (args.Has("file")) {
    if (HasTenantFieldFlags(args) || args.positional().size() > 1) {
      return inv.Usage("-f holds the whole tenant: no NAME or other flags with it");
    }
    Result<std::string> text = ReadTextFile(args.Str("file", ""));
    if (!text.ok()) return inv.Usage(text.error().message);
    body = TenantRequestFromYaml(*text);
    if (!body.ok()) return inv.Usage(args.Str("file", "") + ": " + body.error().message);
  } else {
    if (int rc = inv.ExpectPositionals(2, "create tenant NAME [flags], or create tenant -f FILE.yaml"); rc >= 0) {
      return rc;
    }
    body = TenantFieldsFromArgs(args, nullptr);
    if (!body.ok()) return inv.Usage(body.error().message);
    (*body)["name"] = args.positional()[1];
  }
  return inv.Call("POST", "/v1/tenants", &*body,
                  [](const Json& r) { std::cout << "tenant " << r.value("name", "?") << " created\n"; });
}

int Edit(const std::vector<std::string>& argv) {
  Invocation inv("edit", kEditUsage);
  if (int rc = inv.Parse(argv, {"weight", "quota", "limit", "allow-gpu-cotenancy", "file"}); rc >= 0) return rc;
  const auto& pos = inv.args().positional();
  if (pos.empty() || (pos[0] != "tenant" && pos[0] != "tenants")) return inv.Usage("edit what: tenant NAME");
  if (int rc = inv.ExpectPositionals(2, "edit tenant NAME"); rc >= 0) return rc;
  if (inv.args().Has("file") && HasTenantFieldFlags(inv.args())) return inv.Usage("-f and flags do not go together");
  // Bad flags are usage errors before anything is sent.
  const Json no_tenant = Json::object();
  if (Result<Json> check = TenantFieldsFromArgs(inv.args(), &no_tenant); !check.ok()) {
    return inv.Usage(check.error().message);
  }
  if (int rc = inv.Connect(); rc >= 0) return rc;
  const std::string path = "/v1/tenants/" + UrlEncode(pos[1]);
  std::string edited;
  Result<Json> patch = EditPatch(inv, path, &edited);
  int rc = 0;
  if (!patch.ok()) {
    // An unreadable -f file is a usage error; what the server or the editor did is not.
    const bool usage = patch.error().code == ErrorCode::kInvalidArgument && edited.empty();
    rc = inv.Fail(patch.error(), usage ? 2 : 1);
  } else if (patch->empty()) {
    std::cout << "edit cancelled, no changes made\n";
  } else {
    rc = inv.Call("PATCH", path, &*patch,
                  [&](const Json& r) { std::cout << "tenant " << r.value("name", pos[1]) << " edited\n"; });
  }
  if (edited.empty()) return rc;
  if (rc == 0) {
    std::filesystem::remove(edited);
  } else {
    std::cerr << "gpupool edit: your changes are in " << edited << "\n";
  }
  return rc;
}

}  // namespace gpupool::cli
