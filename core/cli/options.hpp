// The command-line options every generating command shares (run, bench, perplexity, ...), named
// as a llama.cpp user would guess them, and how they override a profile. A command does:
//
//   po::options_description desc("graft run");
//   add_profile_options(desc);
//   auto vm = parse_options(args, desc);            // one-line error on a bad command line
//   auto profile = load_profile_with_overrides(*vm);  // --profile FILE or the built-in defaults
#pragma once

#include <boost/program_options.hpp>

#include <optional>
#include <string>

#include "cli/commands.hpp"
#include "graft/status.hpp"
#include "profile/profile.hpp"

namespace graft::cli {

namespace po = boost::program_options;

// --profile FILE, -m/--model FILE, -c/--ctx N, -n/--n-predict N, --temp X, --top-k N, --top-p X,
// --min-p X, --repeat-penalty X, --repeat-last-n N, --presence-penalty X, --seed N,
// -t/--threads N, -p/--prompt TEXT, -f/--prompt-file FILE, --plugin-dir DIR (repeatable).
// None has a default: an absent flag leaves the profile's value alone.
void add_profile_options(po::options_description& desc);

// Parses `args` (the words after the command name). Unknown options, bad numbers and repeated
// flags come back as one line: "command line: unrecognised option '--tmp'; did you mean '--temp'?".
// Prefix matching of long names is off, so adding an option never changes what an old command
// line means.
Expected<po::variables_map> parse_options(const Args& args, const po::options_description& desc,
                                          const po::positional_options_description& positional = {});

// Applies the flags present in `vm` to `profile`, range-checked with the profile's own rules and
// messages, the source being the flag: "command line: --temp: sampling.temperature = 150 is out
// of range: must be in 0..100". Records each in profile.locations. --prompt and --prompt-file
// together are an error; --plugin-dir folders are searched before the profile's plugin_dirs.
Status apply_overrides(Profile& profile, const po::variables_map& vm);

// The --profile file (the built-in defaults without one) with apply_overrides on top. On failure
// *exit_code (when given) is the command's exit status by the rule in docs/cli.md: 1 for the
// profile file or a file a flag names, 2 for a flag's value.
Expected<Profile> load_profile_with_overrides(const po::variables_map& vm, int* exit_code = nullptr);

// The same, with a failure printed on stderr as PREFIX + the message (one line) and exit_code set.
std::optional<Profile> load_profile_or_report(const po::variables_map& vm, const std::string& prefix, int& exit_code);

}  // namespace graft::cli
