#include "cli/run_support.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <charconv>
#include <cstdio>
#include <iostream>

#include "speculative/drafters.hpp"

namespace graft::cli {

Expected<std::unique_ptr<SpeculativeDecoder>> speculative_decoder(const Pipeline& pipeline) {
  auto drafters = Drafters::load(pipeline);
  if (!drafters) return std::move(drafters).status();
  if (!*drafters) return std::unique_ptr<SpeculativeDecoder>();
  return (*drafters)->new_decoder();
}

std::optional<ParsedCommand> parse_command(const char* name, const Args& args, po::options_description& desc,
                                           int& exit_code) {
  add_profile_options(desc);
  auto vm = parse_options(args, desc);
  if (!vm) {
    std::fprintf(stderr, "graft %s: %s\n", name, vm.status().message().c_str());
    exit_code = 2;
    return std::nullopt;
  }
  if (vm->count("help")) {
    std::cout << desc << "\n";
    exit_code = 0;
    return std::nullopt;
  }
  auto profile = load_profile_or_report(*vm, fmt::format("graft {}: ", name), exit_code);
  if (!profile) return std::nullopt;
  return ParsedCommand{std::move(*vm), std::move(*profile)};
}

Expected<std::unique_ptr<Pipeline>> build_pipeline(const Profile& profile, std::uint32_t max_batch,
                                                   const MemoryOptions& memory) {
  const bool tty = isatty(STDERR_FILENO);
  int last = -1;
  auto progress = [&](std::string_view what, double fraction) {
    const int pct = static_cast<int>(fraction * 100);
    if (pct == last) return;
    last = pct;
    if (tty) {
      std::fprintf(stderr, "\r%.*s: %3d%%", static_cast<int>(what.size()), what.data(), pct);
      if (pct >= 100) std::fputc('\n', stderr);
    } else if (pct == 0 || pct >= 100) {
      std::fprintf(stderr, "%.*s: %d%%\n", static_cast<int>(what.size()), what.data(), pct);
    }
  };
  auto pipeline = Pipeline::build(profile, max_batch, progress, {}, memory);
  if (pipeline) std::fprintf(stderr, "memory plan: %s\n", (*pipeline)->memory_plan().summary().c_str());
  return pipeline;
}

Expected<std::vector<TokenId>> parse_prompt_ids(const std::string& text, std::size_t n_vocab) {
  std::vector<TokenId> ids;
  const char* p = text.data();
  const char* end = p + text.size();
  while (p < end) {
    if (*p == ' ' || *p == ',' || *p == '\t' || *p == '\n' || *p == '[' || *p == ']') {
      ++p;
      continue;
    }
    long long v = 0;
    auto [next, ec] = std::from_chars(p, end, v);
    if (ec != std::errc() || next == p)
      return Status(Errc::invalid_argument, fmt::format("--prompt-ids: '{}' is not a token id", std::string(p, std::min<std::size_t>(end - p, 16))));
    if (v < 0 || static_cast<unsigned long long>(v) >= n_vocab)
      return Status(Errc::out_of_range, fmt::format("--prompt-ids: token id {} is outside the vocabulary (0..{})", v, n_vocab - 1));
    ids.push_back(static_cast<TokenId>(v));
    p = next;
  }
  if (ids.empty()) return Status(Errc::invalid_argument, "--prompt-ids: no token ids given");
  return ids;
}


}  // namespace graft::cli
