#include "model/planning_model.hpp"

#include <fmt/format.h>

#include "model/file_weights.hpp"
#include "model/model_weights.hpp"
#include "model/workspace.hpp"

namespace graft {

namespace {

// A weight while planning: the file's shape and type, no data.
class PlanningWeight final : public Weight {
 public:
  PlanningWeight(std::string file, std::string name, TensorView view)
      : file_(std::move(file)), name_(std::move(name)), view_(view) {
    view_.data = nullptr;
  }
  const TensorView& view() const noexcept override { return view_; }
  Status matmul(const TensorView&, const TensorView&) const override { return refuse("matmul"); }
  Status get_rows(const TensorView&, const TensorView&) const override { return refuse("get_rows"); }

 private:
  Status refuse(const char* op) const {
    return Status(Errc::unsupported, fmt::format("{}: {} of '{}' while planning memory: nothing is loaded", file_, op, name_));
  }
  std::string file_, name_;
  TensorView view_;
};

class PlanningRunner final : public BlockRunner {
 public:
  PlanningRunner(std::string file, std::uint32_t max_rows) : file_(std::move(file)), max_rows_(max_rows) {}
  std::uint32_t max_rows() const noexcept override { return max_rows_; }
  Status layer(std::uint32_t, KvStore&, std::uint32_t, const BlockRows&, const TensorView&) override { return refuse(); }
  Status attention(std::uint32_t, KvStore&, std::uint32_t, const BlockRows&, const TensorView&,
                   const TensorView&) override {
    return refuse();
  }
  Status ffn(std::uint32_t, const TensorView&, const TensorView&) override { return refuse(); }

 private:
  Status refuse() const {
    return Status(Errc::unsupported, fmt::format("{}: a block runner while planning memory runs nothing", file_));
  }
  std::string file_;
  std::uint32_t max_rows_;
};

// Bytes a vector of n elements holds once bound (TensorBinder::vector): uploaded to a device, or,
// in host memory, an f32 copy when the file stores another type.
std::uint64_t vector_bytes(const gguf::TensorInfo& t, Backend& backend, bool upload) {
  if (!backend.host_accessible(MemoryKind::device)) return upload ? t.elements() * sizeof(float) : 0;
  return t.type == type_id::f32 ? 0 : t.elements() * sizeof(float);
}

// A drafter file's bytes count where the backend computes in host memory (the run maps and reads
// them); on a device only the uploads hold its memory.
bool counts_file_bytes(bool target, Backend& backend) { return !target && backend.host_accessible(MemoryKind::device); }

}  // namespace

PlanningModel::PlanningModel(std::shared_ptr<const gguf::File> file, const ModelParams* target, Backend& backend,
                             const HostServices& host, bool graphs, std::shared_ptr<WeightTally> tally)
    : file_(std::move(file)), backend_(backend), host_(host), graphs_(graphs), tally_(std::move(tally)) {
  if (target) target_ = *target;
}

std::string PlanningModel::architecture() const { return target_ ? target_->arch_name : file_->get_string("general.architecture").value_or(""); }
std::uint32_t PlanningModel::n_vocab() const { return target_ ? target_->n_vocab : 0; }
std::uint32_t PlanningModel::n_embd() const { return target_ ? target_->n_embd : 0; }
std::uint32_t PlanningModel::n_layers() const { return target_ ? target_->n_main_layers() : 0; }
std::uint32_t PlanningModel::n_nextn_layers() const { return target_ ? target_->n_nextn : 0; }
BlockShape PlanningModel::block_shape() const { return target_ ? graft::block_shape(*target_) : BlockShape{}; }
std::string PlanningModel::output_name() const {
  return target_ && target_->tied_output ? "token_embd.weight" : "output.weight";
}

Expected<std::vector<std::int32_t>> PlanningModel::tokenize(std::string_view) const {
  return Status(Errc::unsupported, file_->name() + ": tokenize while planning memory: the tokenizer is not loaded");
}

void PlanningModel::count_file_bytes(const gguf::TensorInfo& t) const {
  if (!counts_file_bytes(target_.has_value(), backend_)) return;
  if (tally_->file_tensors.insert({file_.get(), t.name}).second) tally_->weight_bytes += t.bytes;
}

// As FileWeights::weight binds it, counted: a matrix's kernel copy (FormatKernels::prepared_bytes),
// a vector's upload or f32 copy; the target's own embedding, output and final norm are the Model's.
Expected<std::unique_ptr<Weight>> PlanningModel::weight(std::string_view name) const {
  if (target_ && (name == "token_embd.weight" || name == output_name() || name == output_norm_name())) {
    const gguf::TensorInfo* t = file_->tensor(name);
    if (!t) return Status(Errc::not_found, fmt::format("{}: no tensor '{}'", file_->name(), name));
    TensorView v{};
    v.type = t->type;
    v.n_dims = static_cast<std::int32_t>(t->n_dims);
    for (int i = 0; i < 4; ++i) v.ne[i] = static_cast<std::int64_t>(t->ne[i]);
    return std::unique_ptr<Weight>(new PlanningWeight(file_->name(), std::string(name), v));
  }
  const gguf::TensorInfo* t = file_->tensor(name);
  if (!t) return Status(Errc::not_found, fmt::format("{}: no tensor '{}'", file_->name(), name));
  if (t->n_dims != 2) {
    GRAFT_TRY(check_table(file_->name(), name, *t));
    TensorView v = f32_view(nullptr, static_cast<std::int64_t>(t->elements()));
    shape_as_table(v, *t);
    tally_->weight_bytes += vector_bytes(*t, backend_, true);
    count_file_bytes(*t);
    return std::unique_ptr<Weight>(new PlanningWeight(file_->name(), std::string(name), v));
  }
  auto m = bind_matrix(*file_, name, host_, backend_);
  if (!m) return std::move(m).status();
  tally_->weight_bytes += m->kernels->prepared_bytes(backend_, m->view);
  count_file_bytes(*t);
  return std::unique_ptr<Weight>(new PlanningWeight(file_->name(), std::string(name), m->view));
}

Expected<std::unique_ptr<BlockRunner>> PlanningModel::runner(const BlockShape& shape, std::uint32_t max_rows) const {
  auto p = runner_params(file_->name(), shape, target_ ? &*target_ : nullptr);
  if (!p) return std::move(p).status();
  tally_->runner_bytes += Workspace::bytes_for(*p, runner_needs(*p), max_rows, graphs_);
  tally_->runners.push_back({file_, target_.has_value(), *p});
  return std::unique_ptr<BlockRunner>(new PlanningRunner(file_->name(), max_rows));
}

Expected<RunnerBlockBytes> count_runner_blocks(const WeightTally::Runner& runner, const std::vector<std::uint32_t>& blocks,
                                            Backend& backend, const HostServices& host, WeightTally& tally) {
  RunnerBlockBytes bytes;
  for (std::uint32_t block : blocks) {
    // The runner binds the block as FileBlockRunner does: bind_layer, its seven matrices prepared.
    auto L = bind_layer(*runner.file, runner.params, block, host, backend, /*upload=*/false);
    if (!L) return std::move(L).status();
    for (const MatrixWeight* w : {&L->wq, &L->wk, &L->wv, &L->wo, &L->w_gate, &L->w_up, &L->w_down}) {
      bytes.copies += w->kernels->prepared_bytes(backend, w->view);
      if (counts_file_bytes(runner.target, backend) && tally.file_tensors.insert({runner.file.get(), w->name}).second)
        bytes.file += w->bytes;
    }
    for (const VectorWeight* v : {&L->attn_norm, &L->ffn_norm, &L->q_norm, &L->k_norm}) {
      if (v->name.empty()) continue;
      const gguf::TensorInfo* t = runner.file->tensor(v->name);
      if (!t) continue;
      bytes.copies += vector_bytes(*t, backend, true);
      if (counts_file_bytes(runner.target, backend) && tally.file_tensors.insert({runner.file.get(), v->name}).second)
        bytes.file += t->bytes;
    }
  }
  return bytes;
}

}  // namespace graft
