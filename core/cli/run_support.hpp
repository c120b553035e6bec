// What run, perplexity and bench share: building the pipeline with a progress line, parsing
// --prompt-ids, and the stats block.
#pragma once

#include <string>
#include <vector>

#include "engine/generator.hpp"
#include "engine/pipeline.hpp"

namespace graft::cli {

// Builds the pipeline, drawing load progress on stderr when it is a terminal.
Expected<std::unique_ptr<Pipeline>> build_pipeline(const Profile& profile, std::uint32_t max_batch);

// "1 2 3" or "1,2,3" -> ids; each must be inside the vocabulary.
Expected<std::vector<TokenId>> parse_prompt_ids(const std::string& text, std::size_t n_vocab);

std::string human_bytes(std::uint64_t bytes);

}  // namespace graft::cli
