#include "model/file_weights.hpp"

#include <fmt/format.h>

#include <map>
#include <numeric>

#include "model/architecture.hpp"
#include "model/decoder_block.hpp"
#include "model/model.hpp"
#include "model/model_weights.hpp"

namespace graft {

ModelParams block_params(const BlockShape& s) {
  ModelParams p;
  p.arch = find_architecture(s.qk_norm ? "qwen3" : "llama");
  p.arch_name = p.arch->name;
  p.n_embd = s.n_embd;
  p.n_head = s.n_head;
  p.n_head_kv = s.n_head_kv;
  p.head_dim = s.head_dim;
  p.n_ff = s.n_ff;
  p.n_rot = static_cast<std::uint32_t>(s.rope.n_rot);
  p.rope_neox = s.rope.neox;
  p.rope_freq_base = s.rope.freq_base;
  p.rope_freq_scale = s.rope.freq_scale;
  p.rms_eps = s.rms_eps;
  p.qk_norm = s.qk_norm;
  return p;
}

BlockShape block_shape(const ModelParams& p) {
  BlockShape s;
  s.n_embd = p.n_embd;
  s.n_head = p.n_head;
  s.n_head_kv = p.n_head_kv;
  s.head_dim = p.head_dim;
  s.n_ff = p.n_ff;
  s.rms_eps = p.rms_eps;
  s.rope = RopeParams{static_cast<std::int32_t>(p.n_rot), p.rope_neox, p.rope_freq_base, p.rope_freq_scale};
  s.qk_norm = p.qk_norm;
  return s;
}

namespace {

bool same_shape(const BlockShape& a, const BlockShape& b) {
  return a.n_embd == b.n_embd && a.n_head == b.n_head && a.n_head_kv == b.n_head_kv && a.head_dim == b.head_dim &&
         a.n_ff == b.n_ff && a.rms_eps == b.rms_eps && a.qk_norm == b.qk_norm && a.rope.n_rot == b.rope.n_rot &&
         a.rope.neox == b.rope.neox && a.rope.freq_base == b.rope.freq_base && a.rope.freq_scale == b.rope.freq_scale;
}

// A matrix (bound, prepared) or a vector (f32), owned or borrowed from the Model.
class BoundWeight final : public Weight {
 public:
  BoundWeight(Backend& backend, std::string file, MatrixWeight m) : be_(backend), file_(std::move(file)), own_m_(std::move(m)), m_(&own_m_) {}
  BoundWeight(Backend& backend, std::string file, const MatrixWeight* m) : be_(backend), file_(std::move(file)), m_(m) {}
  BoundWeight(Backend& backend, std::string file, VectorWeight v)
      : be_(backend), file_(std::move(file)), own_v_(std::move(v)), v_(&own_v_) {}
  BoundWeight(Backend& backend, std::string file, const VectorWeight* v) : be_(backend), file_(std::move(file)), v_(v) {}

  const TensorView& view() const noexcept override { return m_ ? m_->view : v_->view; }

  Status matmul(const TensorView& x, const TensorView& y) const override {
    if (!m_) return error("matmul", "it is a vector, not a matrix");
    const auto k = m_->view.ne[0], m = m_->view.ne[1];
    if (x.type != type_id::f32 || y.type != type_id::f32 || x.ne[0] != k || y.ne[0] != m || x.rows() != y.rows())
      return error("matmul", fmt::format("x [{}, {}] and y [{}, {}] do not fit the matrix [{}, {}]", x.ne[0], x.rows(),
                                         y.ne[0], y.rows(), k, m));
    return m_->kernels->matmul(be_, m_->view, m_->prepared.get(), x, y);
  }

  Status get_rows(const TensorView& ids, const TensorView& y) const override {
    if (!m_) return error("get_rows", "it is a vector, not a matrix");
    if (ids.type != type_id::i32 || ids.rows() != 1)
      return error("get_rows", fmt::format("ids must be an i32 vector, got type {} with {} rows", ids.type, ids.rows()));
    const std::int64_t n = ids.ne[0];
    // Ids the host can read are checked here; the kernels check the rest (device memory).
    if (be_.host_accessible(ids.memory) && ids.data)
      for (std::int64_t i = 0; i < n; ++i) {
        const std::int32_t id = static_cast<const std::int32_t*>(ids.data)[i];
        if (id < 0 || id >= m_->view.ne[1])
          return error("get_rows", fmt::format("row {} is outside 0..{}", id, m_->view.ne[1] - 1));
      }
    if (y.type != type_id::f32 || y.ne[0] != m_->view.ne[0] || y.rows() != n)
      return error("get_rows", fmt::format("y [{}, {}] does not fit {} rows of {}", y.ne[0], y.rows(), n, m_->view.ne[0]));
    return m_->kernels->get_rows(be_, m_->view, m_->prepared.get(), ids, y);
  }

 private:
  Status error(const char* op, const std::string& why) const {
    return Status(Errc::invalid_argument, fmt::format("{}: {} of '{}': {}", file_, op, m_ ? m_->name : v_->name, why));
  }

  Backend& be_;
  std::string file_;
  MatrixWeight own_m_;
  VectorWeight own_v_;
  const MatrixWeight* m_ = nullptr;
  const VectorWeight* v_ = nullptr;
};

class FileBlockRunner final : public BlockRunner {
 public:
  FileBlockRunner(std::shared_ptr<const gguf::File> file, std::shared_ptr<Backend> backend, const HostServices& host,
                  const ModelParams& p, std::unique_ptr<Workspace> ws)
      : file_(std::move(file)), backend_(std::move(backend)), host_(host), block_(*backend_, p), ws_(std::move(ws)) {}

  std::uint32_t max_rows() const noexcept override { return ws_->max_batch(); }

  Status layer(std::uint32_t block, KvStore& kv, std::uint32_t kv_layer, const BlockRows& rows,
               const TensorView& x) override {
    const LayerWeights* L = nullptr;
    TensorView positions;
    GRAFT_TRY(prepare_call("layer", block, rows, {&x}, L, positions));
    SequenceRows seq{&kv, rows.n_tokens, rows.n_past};
    seq.mask = rows.ancestor;
    return block_.layer(*ws_, *L, kv_layer, std::span(&seq, 1), positions, rows.n_tokens, x.as<float>());
  }

  Status attention(std::uint32_t block, KvStore& kv, std::uint32_t kv_layer, const BlockRows& rows,
                   const TensorView& in, const TensorView& out) override {
    const LayerWeights* L = nullptr;
    TensorView positions;
    GRAFT_TRY(prepare_call("attention", block, rows, {&in, &out}, L, positions));
    SequenceRows seq{&kv, rows.n_tokens, rows.n_past};
    seq.mask = rows.ancestor;
    return block_.attention(*ws_, *L, kv_layer, std::span(&seq, 1), positions, rows.n_tokens, in.as<float>(),
                            out.as<float>());
  }

  Status ffn(std::uint32_t block, const TensorView& in, const TensorView& out) override {
    const LayerWeights* L = nullptr;
    TensorView positions;
    BlockRows rows;
    rows.n_tokens = static_cast<std::uint32_t>(in.rows());
    GRAFT_TRY(prepare_call("ffn", block, rows, {&in, &out}, L, positions, false));
    return block_.ffn(*ws_, *L, rows.n_tokens, in.as<float>(), out.as<float>());
  }

 private:
  // Checks the rows and activations, binds blk.<block> on first use, and fills in the positions
  // (n_past + i in backend memory where the caller gave none).
  Status prepare_call(const char* op, std::uint32_t block, const BlockRows& rows,
                      std::initializer_list<const TensorView*> tensors, const LayerWeights*& L, TensorView& positions,
                      bool attends = true) {
    const auto n = rows.n_tokens;
    if (n == 0 || n > ws_->max_batch())
      return Status(Errc::invalid_argument,
                    fmt::format("block runner {}: {} rows, expected 1..{}", op, n, ws_->max_batch()));
    for (const TensorView* t : tensors)
      if (t->type != type_id::f32 || t->ne[0] != block_.params().n_embd || t->rows() != n ||
          t->nb[1] != std::size_t(t->ne[0]) * sizeof(float))
        return Status(Errc::invalid_argument,
                      fmt::format("block runner {}: activations must be packed f32 [{}, {}], got [{}, {}]", op,
                                  block_.params().n_embd, n, t->ne[0], t->rows()));
    auto it = layers_.find(block);
    if (it == layers_.end()) {
      auto bound = bind_layer(*file_, block_.params(), block, host_, *backend_);
      if (!bound) return std::move(bound).status();
      if (bound->kind == LayerKind::delta_net)
        return Status(Errc::unsupported, fmt::format("{}: block runner: blk.{} is a {} layer; block runners run attention "
                                                     "blocks (a delta-net needs a sequence's recurrent state)",
                                                     file_->name(), block, to_string(bound->kind)));
      for (MatrixWeight* w : {&bound->wq, &bound->wk, &bound->wv, &bound->wo, &bound->w_gate, &bound->w_up,
                              &bound->w_down}) {
        std::unique_ptr<PreparedWeights> prepared;
        GRAFT_TRY(w->kernels->prepare(*backend_, w->view, prepared));
        w->prepared = std::move(prepared);
      }
      it = layers_.emplace(block, std::move(*bound)).first;
    }
    L = &it->second;
    if (!attends) return Status::success();
    if (rows.ancestor.data && (rows.ancestor.type != type_id::i8 || rows.ancestor.ne[0] != n || rows.ancestor.ne[1] != n))
      return Status(Errc::invalid_argument,
                    fmt::format("block runner {}: the ancestor mask must be i8 [{}, {}]", op, n, n));
    positions = rows.positions;
    if (!positions.data) {
      ws_->positions.resize(n);
      std::iota(ws_->positions.begin(), ws_->positions.end(), static_cast<std::int32_t>(rows.n_past));
      GRAFT_TRY(ws_->inputs->begin());
      auto staged = ws_->inputs->add(ws_->positions);
      if (!staged) return std::move(staged).status();
      GRAFT_TRY(ws_->inputs->upload());
      positions = *staged;
    }
    return Status::success();
  }

  std::shared_ptr<const gguf::File> file_;
  std::shared_ptr<Backend> backend_;
  const HostServices& host_;
  DecoderBlock block_;
  std::unique_ptr<Workspace> ws_;
  std::map<std::uint32_t, LayerWeights> layers_;
};

}  // namespace

FileWeights::FileWeights(std::shared_ptr<const gguf::File> file, std::shared_ptr<Backend> backend,
                         const HostServices& host, const Model* model)
    : file_(std::move(file)), backend_(std::move(backend)), host_(host), model_(model) {}

std::string FileWeights::path() const { return file_->name(); }
std::optional<std::int64_t> FileWeights::meta_int(std::string_view key) const { return file_->get_int(key); }
std::optional<double> FileWeights::meta_real(std::string_view key) const { return file_->get_real(key); }
std::optional<std::string> FileWeights::meta_string(std::string_view key) const { return file_->get_string(key); }
std::optional<std::vector<std::int64_t>> FileWeights::meta_int_array(std::string_view key) const {
  return file_->get_int_array(key);
}
bool FileWeights::has_tensor(std::string_view name) const { return file_->tensor(name) != nullptr; }

Expected<std::unique_ptr<Weight>> FileWeights::weight(std::string_view name) const {
  if (model_) {
    const ModelWeights& W = model_->weights();
    if (name == W.token_embd.name) return std::unique_ptr<Weight>(new BoundWeight(*backend_, file_->name(), &W.token_embd));
    if (name == W.output.name) return std::unique_ptr<Weight>(new BoundWeight(*backend_, file_->name(), &W.output));
    if (name == W.output_norm.name) return std::unique_ptr<Weight>(new BoundWeight(*backend_, file_->name(), &W.output_norm));
  }
  const gguf::TensorInfo* t = file_->tensor(name);
  if (!t) return Status(Errc::not_found, fmt::format("{}: no tensor '{}'", file_->name(), name));
  if (t->n_dims != 2) {
    // Not a matrix the kernels multiply by: f32 values in the file's shape (a vector, or a
    // drafter's 3-D table such as DFlash2's conv_base [d, kernel, 2]), read by the caller. Only
    // float tables of more than 2 dimensions: a quantized one (an MoE expert stack) is meant for
    // kernels that do not exist yet, and widening it to f32 would hide that.
    GRAFT_TRY(check_table(file_->name(), name, *t));
    auto v = bind_vector(*file_, name, host_, *backend_);
    if (!v) return std::move(v).status();
    shape_as_table(v->view, *t);
    return std::unique_ptr<Weight>(new BoundWeight(*backend_, file_->name(), std::move(*v)));
  }
  auto m = bind_matrix(*file_, name, host_, *backend_);
  if (!m) return std::move(m).status();
  std::unique_ptr<PreparedWeights> prepared;
  if (Status st = m->kernels->prepare(*backend_, m->view, prepared); !st.ok())
    return Status(st.code(), fmt::format("{}: {}: {}", file_->name(), name, st.message()));
  m->prepared = std::move(prepared);
  return std::unique_ptr<Weight>(new BoundWeight(*backend_, file_->name(), std::move(*m)));
}

Status check_table(const std::string& file_name, std::string_view name, const gguf::TensorInfo& t) {
  if (t.n_dims > 2 && t.type != type_id::f32 && t.type != type_id::f16 && t.type != type_id::bf16)
    return Status(Errc::not_implemented,
                  fmt::format("{}: {}: a {}-D tensor of type id {}: only f32/f16/bf16 tables of more than two "
                              "dimensions can be read (not implemented for quantized ones)",
                              file_name, name, t.n_dims, t.type));
  return Status::success();
}

void shape_as_table(TensorView& v, const gguf::TensorInfo& t) {
  v.n_dims = static_cast<std::int32_t>(t.n_dims);
  for (int i = 0; i < 4; ++i) v.ne[i] = static_cast<std::int64_t>(t.ne[i]);
  for (int i = 1; i < 4; ++i) v.nb[i] = v.nb[i - 1] * static_cast<std::size_t>(v.ne[i - 1]);
}

Expected<ModelParams> runner_params(const std::string& file_name, const BlockShape& shape, const ModelParams* target) {
  if (shape.n_embd == 0 || shape.n_head == 0 || shape.n_head_kv == 0 || shape.head_dim == 0 || shape.n_ff == 0 ||
      shape.n_head % shape.n_head_kv != 0 || shape.rope.n_rot < 0 || std::uint32_t(shape.rope.n_rot) > shape.head_dim)
    return Status(Errc::invalid_argument,
                  fmt::format("{}: block runner: inconsistent block shape (embd {}, heads {}/{}, head_dim {}, ff {}, rot {})",
                              file_name, shape.n_embd, shape.n_head, shape.n_head_kv, shape.head_dim, shape.n_ff,
                              shape.rope.n_rot));
  // The target's own blocks (its MTP block) with its architecture's layer kinds; any other shape
  // as a llama or qwen3 block.
  const bool own = target && same_shape(shape, block_shape(*target));
  return own ? *target : block_params(shape);
}

WorkspaceNeeds runner_needs(const ModelParams& p) {
  WorkspaceNeeds needs;
  needs.gated_q = p.arch->nextn_kind == LayerKind::gated_attention;
  return needs;
}

Expected<std::unique_ptr<BlockRunner>> FileWeights::runner(const BlockShape& shape, std::uint32_t max_rows) const {
  auto p = runner_params(file_->name(), shape, model_ ? &model_->params() : nullptr);
  if (!p) return std::move(p).status();
  auto ws = Workspace::create(*backend_, *p, runner_needs(*p), max_rows);
  if (!ws) return std::move(ws).status();
  return std::unique_ptr<BlockRunner>(new FileBlockRunner(file_, backend_, host_, *p, std::move(*ws)));
}

}  // namespace graft
