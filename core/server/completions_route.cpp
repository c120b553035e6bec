// POST /v1/completions: OpenAI's text completions, whole or streamed as server-sent events.
#include <fmt/format.h>
#include <httplib.h>

#include <ctime>

#include "server/completion_request.hpp"
#include "server/generation_route.hpp"
#include "tokenizer/tokenizer.hpp"

namespace graft::server {

namespace {

using nlohmann::json;

class CompletionShape final : public ResponseShape {
 public:
  CompletionShape(std::string id, std::string model) : id_(std::move(id)), model_(std::move(model)) {}
  json whole(const GenerationJob& job) override {
    json body = chunk(job.text, openai_finish_reason(job));
    body["usage"] = usage(job);
    body["graft"] = graft_fields(job);
    return body;
  }
  void event(const AnswerEvent& e, std::vector<std::string>& out) override { out.push_back(sse(chunk(e.text, nullptr))); }
  void closing(const GenerationJob& job, bool include_usage, std::vector<std::string>& out) override {
    json e = chunk("", openai_finish_reason(job));
    e["graft"] = graft_fields(job);
    out.push_back(sse(e));
    if (include_usage) {
      json u = chunk("", nullptr);
      u["choices"] = json::array();
      u["usage"] = usage(job);
      out.push_back(sse(u));
    }
    out.push_back("data: [DONE]\n\n");
  }

 private:
  json chunk(const std::string& text, const json& finish_reason) const {
    return {{"id", id_},
            {"object", "text_completion"},
            {"created", created_},
            {"model", model_},
            {"choices",
             json::array({{{"text", text}, {"index", 0}, {"logprobs", nullptr}, {"finish_reason", finish_reason}}})}};
  }
  std::string id_, model_;
  std::time_t created_ = std::time(nullptr);
};

}  // namespace

void handle_completions(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
  auto parsed = parse_completion_request(req.body, ctx.pipeline.profile().sampling);
  if (auto* e = std::get_if<ApiError>(&parsed)) return send_error(res, *e);
  CompletionRequest& r = std::get<CompletionRequest>(parsed);
  const Tokenizer& tok = ctx.pipeline.tokenizer();
  auto job = std::make_shared<GenerationJob>();
  if (r.prompt_is_ids) {
    for (TokenId id : r.prompt_ids)
      if (static_cast<std::uint32_t>(id) >= tok.n_vocab())
        return send_error(res, bad_request(fmt::format("'prompt' holds token id {}, outside the vocabulary (0..{})", id,
                                                       tok.n_vocab() - 1),
                                           "prompt"));
    job->prompt = std::move(r.prompt_ids);
  } else {
    TokenizeOptions opt;
    opt.add_special = true;   // the vocabulary's BOS, as graft run
    opt.parse_special = true;
    auto ids = tok.encode(r.prompt_text, opt);
    if (!ids) return send_error(res, bad_request("'prompt': " + ids.status().message(), "prompt"));
    job->prompt = std::move(*ids);
  }
  if (auto e = check_prompt_fits(ctx, job->prompt.size())) return send_error(res, *e);
  run_generation(ctx, res, job, r.fields,
                 std::make_shared<CompletionShape>(ctx.new_id("cmpl-"), r.model.empty() ? ctx.model_name : r.model));
}

}  // namespace graft::server
