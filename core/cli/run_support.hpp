// What run, perplexity and bench share: building the pipeline with a progress line, parsing
// --prompt-ids, and the stats block.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/human_bytes.hpp"
#include "cli/options.hpp"

#include "engine/memory_plan.hpp"
#include "engine/pipeline.hpp"
#include "speculative/speculative_decoder.hpp"

namespace graft::cli {

struct ParsedCommand {
  po::variables_map vm;
  Profile profile;  // --profile or the built-in defaults, with the flags applied
};

// Adds the profile flags to desc, parses args and loads the profile. Returns nullopt when the
// command is finished: --help printed (exit 0), a command-line error (2) or a profile error (1),
// with the message already on stderr as "graft NAME: ...".
std::optional<ParsedCommand> parse_command(const char* name, const Args& args, po::options_description& desc,
                                           int& exit_code);

// Builds the pipeline, drawing load progress on stderr when it is a terminal; the memory plan is
// said on stderr first ("memory plan: ..."), and one that does not fit is the error.
Expected<std::unique_ptr<Pipeline>> build_pipeline(const Profile& profile, std::uint32_t max_batch,
                                                   const MemoryOptions& memory = {});

// The speculative decoder the profile asks for (its drafters loaded and made for one sequence), or
// null when it does not speculate. Errors are one line naming the drafter.
Expected<std::unique_ptr<SpeculativeDecoder>> speculative_decoder(const Pipeline& pipeline);

// "1 2 3" or "1,2,3" -> ids; each must be inside the vocabulary.
Expected<std::vector<TokenId>> parse_prompt_ids(const std::string& text, std::size_t n_vocab);

}  // namespace graft::cli
