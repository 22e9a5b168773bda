// `gpupool catalogue [MODEL]`: the built-in GPU models and their MIG geometry.
#include <iostream>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/table.h"
#include "model/catalogue.h"

namespace gpupool::cli {

const char* const kCatalogueUsage =
    "usage: gpupool catalogue [MODEL]   (the built-in GPU models and their MIG profiles)\n";

int Catalogue(const std::vector<std::string>& argv_in) {
  Result<Args> args = Args::Parse(argv_in, {"help"}, {"help"});
  if (args.ok() && args->Has("help")) {
    std::cout << kCatalogueUsage;
    return 0;
  }
  if (!args.ok() || args->positional().size() > 1) {
    std::cerr << "gpupool catalogue: " << (args.ok() ? "one MODEL at most" : args.error().message) << "\n"
              << kCatalogueUsage;
    return 2;
  }
  const std::vector<std::string>& argv = args->positional();
  const gpupool::Catalogue cat = gpupool::Catalogue::BuiltIn();
  for (const GpuModel& m : cat.models()) {
    if (!argv.empty() && argv[0] != m.name) continue;
    std::cout << m.name << "  " << m.memory_mib << " MiB"
              << (m.verified ? "" : "  (MIG geometry not verified on hardware)") << "\n";
    Table t({"profile", "GI id", "compute", "memory", "max", "starts"});
    for (const MigProfile& p : m.profiles) {
      std::string starts;
      for (int s = 0; s < 8; ++s) {
        if (p.ValidStart(s)) starts += (starts.empty() ? "" : ",") + std::to_string(s);
      }
      t.Row({p.name, std::to_string(p.id), std::to_string(p.compute_slices) + "/7",
             std::to_string(p.memory_slices) + "/8", std::to_string(p.max_count), starts});
    }
    t.Print(std::cout);
    std::cout << "\n";
  }
  if (!argv.empty() && !cat.Find(argv[0]).ok()) {
    std::cerr << "gpupool catalogue: unknown GPU model '" << argv[0] << "'\n";
    return 2;
  }
  return 0;
}

}  // namespace gpupool::cli
