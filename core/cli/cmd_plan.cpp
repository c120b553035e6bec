// graft plan: the memory a run or the server would hold, as a table, and whether it fits, without
// loading the model (Pipeline::plan; docs/memory.md). Exit 0 when it fits, 1 when it does not.
#include <cstdio>
#include <string>

#include "cli/commands.hpp"
#include "cli/options.hpp"
#include "cli/run_support.hpp"
#include "common/human_bytes.hpp"

namespace graft::cli {

int cmd_plan(const Args& args) {
  po::options_description desc("graft plan [--profile P] [--model M] [--ctx N|auto] [--parallel N] [--memory SIZE]");
  desc.add_options()("help,h", "show this help")(
      "parallel", po::value<std::int64_t>()->value_name("N")->default_value(1),
      "sequences, each of the whole context (graft serve --parallel N: they share one workspace)")(
      "memory", po::value<std::string>()->value_name("SIZE"),
      "the memory to plan for, e.g. 16GiB (default: what the backend's device has); with it a GPU profile is "
      "planned on a machine without that GPU")(
      "batch,b", po::value<std::int64_t>()->value_name("N")->default_value(256), "rows per forward pass (graft run --batch)");
  int exit_code = 0;
  auto parsed = parse_command("plan", args, desc, exit_code);
  if (!parsed) return exit_code;
  auto& vm = parsed->vm;
  const std::int64_t parallel = vm["parallel"].as<std::int64_t>(), batch = vm["batch"].as<std::int64_t>();
  if (parallel < 1 || parallel > 256) {
    std::fprintf(stderr, "graft plan: command line: --parallel: %lld is out of range: must be in 1..256\n",
                 static_cast<long long>(parallel));
    return 2;
  }
  if (batch < 1 || batch > 65536) {
    std::fprintf(stderr, "graft plan: command line: --batch: %lld is out of range: must be in 1..65536\n",
                 static_cast<long long>(batch));
    return 2;
  }
  MemoryOptions memory;
  memory.parallel = static_cast<std::uint32_t>(parallel);
  memory.shared_workspace = parallel > 1;  // several sequences: the server's, one workspace
  if (vm.count("memory")) {
    const std::string text = vm["memory"].as<std::string>();
    auto bytes = parse_byte_size(text);
    if (!bytes) {
      std::fprintf(stderr, "graft plan: command line: --memory: %s\n", bytes.status().message().c_str());
      return 2;
    }
    memory.budget = *bytes;
    memory.budget_source = "--memory " + text;
    memory.without_device = true;  // a GPU profile can be planned on a machine without the GPU
  }
  const Profile& profile = parsed->profile;
  auto plan = Pipeline::plan(profile, static_cast<std::uint32_t>(batch), memory);
  if (!plan) {
    std::fprintf(stderr, "graft plan: %s\n", plan.status().message().c_str());
    return 1;
  }
  std::printf("memory plan: %s, %s, context %u%s, %u sequence%s\n", profile.model.string().c_str(),
              plan->kv.c_str(), plan->context, plan->context_auto ? " (auto)" : "", plan->parallel,
              plan->parallel == 1 ? "" : "s");
  if (!plan->choice.empty()) std::printf("--profile auto: %s\n", plan->choice.c_str());
  std::printf("%s", plan->table().c_str());
  return plan->fits() ? 0 : 1;
}

}  // namespace graft::cli
