// The MTP drafter: the target file's own nextn (multi-token prediction) block, run as llama.cpp
// runs Qwen3.5/GLM MTP heads (docs/speculative.md, docs/models.md). Entry i of the head reads
// the target's final hidden state after output_norm at position i and the token i+1:
//   x = eh_proj(concat(rms_norm(embed(t[i+1])) * enorm, rms_norm(h_i) * hnorm))   embedding first
//   x = the decoder block blk.B (RoPE position i+1, attention over the head's own KV cache)
//   g = rms_norm(x) * shared_head_norm; logits = lm_head(g)                       predicts t[i+2]
// Drafting continues from the last entry: step s >= 2 is the entry (g of step s-1, draft s-1).
// Every committed token becomes an entry (begin/accept hand the hidden states of the verify pass);
// the entries run at the next propose, as one batch, so rounds the mix does not ask this drafter
// cost only a copy. Draft entries are cut off again before the next entries run.
// After a long stretch of skipped rounds only the last `resume_window` queued entries run: the
// ones before them never reach the head's KV cache, so its attention sees a gap (RoPE keeps the
// true positions). Drafts may then differ from an exact head's, never the output: the target
// verifies every token. This bounds what a resumed proposal costs (the catch-up of a few hundred
// entries cost ~9 target decode steps on the zoo model).
// truncate(n) keeps entries 0..n-2 and makes entry n-1 (it read the replaced token n) a gap: its
// h_{n-1} is not handed over again. A cut into entries already run cuts the head's KV cache there
// (emptied instead when an earlier gap left its slots without entry numbers).
#pragma once

#include <memory>
#include <vector>

#include "graft/graft.hpp"

namespace graft::mtp {

struct MtpOptions {
  std::uint32_t max_draft = 3;  // draft steps per round
  float p_min = 0.0f;           // stop drafting when the head's top probability is below this
  std::uint32_t top_k = 1;      // first-step candidates proposed as siblings (a tree) when > 1
  std::uint32_t resume_window = 16;  // queued entries run at most (the latest); 0 = all (exact)
};

class MtpDrafter final : public Drafter {
 public:
  static Expected<std::unique_ptr<Drafter>> create(const DrafterHost& host, const MtpOptions& options);
  // What create() holds (DrafterFactory::memory), from a planning host.
  static Expected<DrafterMemory> memory(const DrafterHost& host, const MtpOptions& options);

  DrafterNeeds needs() const override;
  Status begin(const CommitInfo& info) override;
  Status propose(const DraftRequest& request, DraftTree& out) override;
  Status accept(const CommitInfo& info) override;
  Status truncate(std::uint32_t n) override;

 private:
  MtpDrafter() = default;
  // The checks, the head's weights and its block runner: what create() and memory() share.
  Status bind(const DrafterHost& host, const MtpOptions& options);
  // Queues entries for context[first, n_committed) (hidden rows given) after `first` entries.
  // When the ring is full: a prompt's (whole) entries run now; a round's beyond the window are
  // dropped as the window would drop them, or with no window run now.
  Status add_entries(const CommitInfo& info, bool whole);
  // Runs the queued entries (the last `window` of them when window > 0) through the block, then
  // the head of the last one.
  Status flush(std::uint32_t window);
  // Entries: those in the KV cache, then the queued ones.
  std::uint32_t held() const { return n_entries_ + static_cast<std::uint32_t>(pending_tokens_.size()); }
  // src[0..n) copied to dst (backend memory): the view of it for get_rows and BlockRows.
  TensorView upload(std::int32_t* dst, const std::int32_t* src, std::uint32_t n, Status& status);
  // Runs entries already laid out in x_ (rows [0, n)) at KV slots [slot, slot + n); leaves the
  // head's g and logits of the last one.
  Status run_entries(std::uint32_t n, std::uint32_t slot);
  // e and h rows -> x = eh_proj(concat(enorm(e), hnorm(h))) for rows [0, n).
  Status project(std::uint32_t n);
  // g = shared_head_norm(x[row]), logits = lm_head(g), and their softmax's k_head_ best ids and
  // probabilities into slot `slot` of top_ids_dev_ / top_p_dev_ (the logits stay on the backend).
  Status head(std::uint32_t row, std::uint32_t slot);
  // Waits for the stream and copies slots [0, n) to top_ids_ / top_p_.
  Status read_heads(std::uint32_t n);

  const ModelView* target_ = nullptr;
  Backend* be_ = nullptr;
  MtpOptions opt_;
  std::uint32_t block_ = 0, E_ = 0, V_ = 0, max_rows_ = 0;
  float eps_ = 1e-6f;
  std::unique_ptr<Weight> eh_proj_, enorm_, hnorm_, head_norm_, embed_, lm_head_;
  std::unique_ptr<BlockRunner> runner_;
  std::unique_ptr<KvStore> kv_;
  // Backend buffers: e, h [E, rows], concat [2E, rows], x [E, rows], g [E], logits [V].
  std::unique_ptr<Buffer> buf_;
  float *e_ = nullptr, *h_ = nullptr, *cat_ = nullptr, *x_ = nullptr, *g_ = nullptr, *logits_dev_ = nullptr;
  std::int32_t *ids_dev_ = nullptr, *pos_dev_ = nullptr;  // token ids and RoPE positions, backend memory
  std::int32_t* top_ids_dev_ = nullptr;  // the heads' best ids, i32 [max_draft][k_head_], and their probabilities
  float* top_p_dev_ = nullptr;
  std::uint32_t k_head_ = 1;             // candidates the head hands back: max(1, top_k)
  float* g_last_ = nullptr;      // the last entry's g, the h of the first draft step (backend memory)
  std::vector<std::int32_t> top_ids_;  // host copies of a proposal's heads' best ids, best first
  std::vector<float> top_p_;           // and their probabilities
  std::uint32_t n_entries_ = 0; // committed entries (those in kv_ and those the window left out)
  std::uint32_t n_slots_ = 0;   // KV slots they fill (fewer than n_entries_ after a gap)
  bool have_head_ = false;      // slot 0 of top_ids_dev_ and g_last_ belong to entry n_entries_ - 1
  // Queued entries (after n_entries_): token i+1 of each (host), and the target's h_i rows in a
  // ring of queue_cap_ rows in backend memory (the verify pass's rows arrive there and never
  // leave it): row k of the queue is ring row (queue_head_ + k) % queue_cap_.
  std::vector<std::int32_t> pending_tokens_;
  std::unique_ptr<Buffer> queue_buf_;
  float* queue_ = nullptr;
  std::uint32_t queue_cap_ = 0, queue_head_ = 0;
  // Appends rows of h (kind `memory`) to the ring (room checked by the caller).
  Status queue_push(const float* h, MemoryKind memory, std::uint32_t n);
  // Copies queued rows [k, k + n) to dst (backend memory).
  Status queue_copy_out(std::uint32_t k, std::uint32_t n, float* dst);
  // Forgets the first n queued entries (their tokens too).
  void queue_pop(std::uint32_t n);
};

}  // namespace graft::mtp
