#include "dflash_file.hpp"

namespace graft::dflash2 {

namespace {

std::string n(std::int64_t v) { return std::to_string(v); }

std::string shape_of(const TensorView& t) {
  std::string s = "[" + n(t.ne[0]);
  for (int i = 1; i < t.n_dims; ++i) s += ", " + n(t.ne[i]);
  return s + "]";
}

// Reads the file's metadata and binds its tensors, or says in one line what does not fit.
class Loader {
 public:
  Loader(const DrafterHost& host, DFlashFile& f) : t_(host.target()), f_(f) {}

  Status load() {
    GRAFT_TRY(read_metadata());
    GRAFT_TRY(bind_shared());
    GRAFT_TRY(bind_selector());
    f_.layers.resize(f_.n_layers);
    for (std::uint32_t i = 0; i < f_.n_layers; ++i) GRAFT_TRY(bind_layer(i));
    return Status::success();
  }

 private:
  Status error(const std::string& why) const { return Status(Errc::invalid_argument, f_.path + ": " + why); }

  Status required(const std::string& key, std::int64_t& out, std::int64_t lo, std::int64_t hi) const {
    auto v = f_.file->meta_int(key);
    if (!v) return error("missing " + key);
    if (*v < lo || *v > hi) return error(key + " = " + n(*v) + " is outside " + n(lo) + ".." + n(hi));
    out = *v;
    return Status::success();
  }

  Status take(const std::string& name, std::unique_ptr<Weight>& out, const WeightFile* from = nullptr) const {
    auto w = (from ? *from : *f_.file).weight(name);
    if (!w) return w.status();
    out = std::move(*w);
    return Status::success();
  }

  Status expect_shape(const Weight& w, const std::string& name, std::int64_t ne0, std::int64_t ne1,
                      const std::string& why = "") const {
    const TensorView& v = w.view();
    if (v.n_dims == 2 && v.ne[0] == ne0 && v.ne[1] == ne1) return Status::success();
    return error(name + " is " + shape_of(v) + ", expected [" + n(ne0) + ", " + n(ne1) + "]" + why);
  }

  Status expect_elements(const Weight& w, const std::string& name, std::int64_t count) const {
    if (w.view().elements() == count) return Status::success();
    return error(name + " has " + n(w.view().elements()) + " values, expected " + n(count));
  }

  // A table indexed by the target's token ids must have a row for each of them.
  Status expect_vocab(const Weight& w, const std::string& name) const {
    if (w.view().ne[1] == f_.n_vocab) return Status::success();
    return error("vocabulary of " + n(w.view().ne[1]) + " (" + name + " rows) does not fit the target's " +
                 n(f_.n_vocab) + " tokens");
  }

  Status read_metadata() {
    const WeightFile& file = *f_.file;
    const std::string arch = file.meta_string("general.architecture").value_or("");
    if (arch != "dflash")
      return error("general.architecture is '" + arch + "', expected 'dflash' (a DFlash drafter GGUF)");
    const std::string a = "dflash.";
    const BlockShape target = t_.block_shape();
    std::int64_t layers = 0, embd = 0, ff = 0, heads = 0, block = 0;
    GRAFT_TRY(required(a + "block_count", layers, 1, 256));
    GRAFT_TRY(required(a + "embedding_length", embd, 1, 1 << 20));
    if (embd != t_.n_embd())
      return error("hidden size " + n(embd) + " (dflash.embedding_length) does not fit the target's " + n(t_.n_embd()) +
                   ": the drafter reads the target's hidden states and shares its embedding");
    GRAFT_TRY(required(a + "feed_forward_length", ff, 1, 1 << 24));
    GRAFT_TRY(required(a + "attention.head_count", heads, 1, 4096));
    GRAFT_TRY(required(a + "block_size", block, 2, 64));
    const std::int64_t kv_heads = file.meta_int(a + "attention.head_count_kv").value_or(heads);
    const std::int64_t head_dim = file.meta_int(a + "attention.key_length").value_or(embd / heads);
    if (kv_heads < 1 || heads % kv_heads != 0 || head_dim < 2)
      return error("attention heads " + n(heads) + " / " + n(kv_heads) + " of " + n(head_dim) + " dims do not make a block");
    f_.n_layers = static_cast<std::uint32_t>(layers);
    f_.block_size = static_cast<std::uint32_t>(block);
    f_.n_vocab = t_.n_vocab();
    BlockShape& s = f_.shape;
    s.n_embd = static_cast<std::uint32_t>(embd);
    s.n_head = static_cast<std::uint32_t>(heads);
    s.n_head_kv = static_cast<std::uint32_t>(kv_heads);
    s.head_dim = static_cast<std::uint32_t>(head_dim);
    s.n_ff = static_cast<std::uint32_t>(ff);
    s.rms_eps = static_cast<float>(file.meta_real(a + "attention.layer_norm_rms_epsilon").value_or(target.rms_eps));
    // qwen3-style layers: NEOX RoPE over the whole head, as llama.cpp's dflash graph.
    s.rope = RopeParams{static_cast<std::int32_t>(file.meta_int(a + "rope.dimension_count").value_or(head_dim)), true,
                        static_cast<float>(file.meta_real(a + "rope.freq_base").value_or(target.rope.freq_base)), 1.0f};
    s.qk_norm = file.has_tensor("blk.0.attn_q_norm.weight");

    const auto layers_ids = file.meta_int_array(a + "target_layers");
    if (!layers_ids || layers_ids->empty()) return error("missing dflash.target_layers (an array of target layer ids)");
    for (std::int64_t id : *layers_ids) {
      if (id < 0 || id > t_.n_layers())
        return error("dflash.target_layers has layer " + n(id) + ", outside the target's 0.." + n(t_.n_layers()) +
                     " (llama.cpp's ids: 0 = the embeddings, " + n(t_.n_layers()) + " = the last layer's output)");
      f_.target_layers.push_back(static_cast<std::int32_t>(id));
    }
    f_.feature_width = static_cast<std::uint32_t>(f_.target_layers.size()) * t_.n_embd();

    const auto mask = file.meta_int("tokenizer.ggml.mask_token_id");
    if (!mask) return error("missing tokenizer.ggml.mask_token_id (the token of the block's masked slots)");
    if (*mask < 0 || *mask >= f_.n_vocab)
      return error("tokenizer.ggml.mask_token_id " + n(*mask) + " is outside the target's vocabulary of " +
                   n(f_.n_vocab) + " tokens");
    f_.mask_token = static_cast<std::int32_t>(*mask);
    // A drafter that carries a tokenizer must carry the target's (one type per token).
    if (const auto types = file.meta_int_array("tokenizer.ggml.token_type"); types && types->size() != f_.n_vocab)
      return error("vocabulary of " + n(static_cast<std::int64_t>(types->size())) +
                   " (tokenizer.ggml.token_type entries) does not fit the target's " + n(f_.n_vocab) + " tokens");
    return Status::success();
  }

  Status bind_shared() {
    const std::int64_t E = f_.shape.n_embd;
    GRAFT_TRY(take("fc.weight", f_.fc));
    GRAFT_TRY(expect_shape(*f_.fc, "fc.weight", f_.feature_width, E,
                           " (" + n(static_cast<std::int64_t>(f_.target_layers.size())) + " target layers x " +
                               n(t_.n_embd()) + " -> " + n(E) + ")"));
    GRAFT_TRY(take("enc.output_norm.weight", f_.enc_norm));
    GRAFT_TRY(expect_elements(*f_.enc_norm, "enc.output_norm.weight", E));
    GRAFT_TRY(take("output_norm.weight", f_.output_norm));
    GRAFT_TRY(expect_elements(*f_.output_norm, "output_norm.weight", E));
    // The target's embedding and lm_head unless the drafter has its own (llama.cpp's rule).
    const bool own_embd = f_.file->has_tensor("token_embd.weight"), own_out = f_.file->has_tensor("output.weight");
    GRAFT_TRY(take("token_embd.weight", f_.embed, own_embd ? nullptr : &t_));
    GRAFT_TRY(take(own_out ? "output.weight" : t_.output_name(), f_.lm_head, own_out ? nullptr : &t_));
    if (own_embd) GRAFT_TRY(expect_vocab(*f_.embed, "token_embd.weight"));
    if (own_out) GRAFT_TRY(expect_vocab(*f_.lm_head, "output.weight"));
    return Status::success();
  }

  Status bind_selector() {
    const WeightFile& file = *f_.file;
    const char* names[] = {"selector_predecessor.weight", "selector_successor.weight", "selector_hidden.weight"};
    int present = 0;
    for (const char* name : names) present += file.has_tensor(name);
    if (present == 0) return Status::success();
    if (present != 3) {
      for (const char* name : names)
        if (!file.has_tensor(name)) return error("has a DFlash2 selector without '" + std::string(name) + "'");
    }
    GRAFT_TRY(take(names[0], f_.sel_prev));
    GRAFT_TRY(take(names[1], f_.sel_next));
    GRAFT_TRY(take(names[2], f_.sel_hidden));
    const std::int64_t rank = f_.sel_prev->view().ne[0];
    GRAFT_TRY(expect_vocab(*f_.sel_prev, names[0]));
    GRAFT_TRY(expect_vocab(*f_.sel_next, names[1]));
    GRAFT_TRY(expect_shape(*f_.sel_next, names[1], rank, f_.n_vocab, " (like selector_predecessor.weight)"));
    GRAFT_TRY(expect_shape(*f_.sel_hidden, names[2], f_.shape.n_embd, rank));
    std::int64_t top_k = 8;
    if (file.meta_int("dflash.selector_top_k")) GRAFT_TRY(required("dflash.selector_top_k", top_k, 1, 64));
    f_.has_selector = true;
    f_.selector_rank = static_cast<std::uint32_t>(rank);
    f_.selector_top_k = static_cast<std::uint32_t>(top_k);
    return Status::success();
  }

  Status bind_layer(std::uint32_t i) {
    const BlockShape& s = f_.shape;
    const std::string p = "blk." + n(i) + ".";
    DFlashLayer& L = f_.layers[i];
    GRAFT_TRY(take(p + "attn_norm.weight", L.attn_norm));
    GRAFT_TRY(expect_elements(*L.attn_norm, p + "attn_norm.weight", s.n_embd));
    GRAFT_TRY(take(p + "ffn_norm.weight", L.ffn_norm));
    GRAFT_TRY(expect_elements(*L.ffn_norm, p + "ffn_norm.weight", s.n_embd));
    const std::int64_t kv_dim = std::int64_t(s.n_head_kv) * s.head_dim;
    GRAFT_TRY(take(p + "attn_k.weight", L.k));
    GRAFT_TRY(expect_shape(*L.k, p + "attn_k.weight", s.n_embd, kv_dim));
    GRAFT_TRY(take(p + "attn_v.weight", L.v));
    GRAFT_TRY(expect_shape(*L.v, p + "attn_v.weight", s.n_embd, kv_dim));
    if (s.qk_norm) {
      GRAFT_TRY(take(p + "attn_k_norm.weight", L.k_norm));
      GRAFT_TRY(expect_elements(*L.k_norm, p + "attn_k_norm.weight", s.head_dim));
    }
    // DFlash2 convolutions: in every layer or in none.
    const bool conv = f_.file->has_tensor(p + "attn_conv_base");
    if (i == 0 && conv) GRAFT_TRY(read_conv_shape());
    if (conv != f_.has_conv)
      return error(conv ? p + "attn_conv_base is a DFlash2 convolution, but blk.0 has none"
                        : "blk.0 has DFlash2 convolutions, but " + p + "attn_conv_base is missing");
    if (!conv) return Status::success();
    const std::int64_t base = 2 * std::int64_t(f_.conv.kernel) * s.n_embd;
    for (const char* half : {"attn", "ffn"}) {
      const std::string b = p + half + "_conv_base", w = p + half + "_conv_proj.weight";
      std::unique_ptr<Weight>& bw = half[0] == 'a' ? L.attn_conv_base : L.ffn_conv_base;
      std::unique_ptr<Weight>& pw = half[0] == 'a' ? L.attn_conv_proj : L.ffn_conv_proj;
      GRAFT_TRY(take(b, bw));
      GRAFT_TRY(expect_elements(*bw, b, base));
      GRAFT_TRY(take(w, pw));
      GRAFT_TRY(expect_shape(*pw, w, s.n_embd, f_.conv.dyn_width(), " (2 sides x kernel x channel groups)"));
    }
    return Status::success();
  }

  Status read_conv_shape() {
    std::int64_t kernel = 0, group = 0;
    GRAFT_TRY(required("dflash.conv_kernel_size", kernel, 1, 16));
    GRAFT_TRY(required("dflash.conv_group_size", group, 1, f_.shape.n_embd));
    if (f_.shape.n_embd % group != 0)
      return error("dflash.conv_group_size " + n(group) + " does not divide the hidden size " + n(f_.shape.n_embd));
    f_.has_conv = true;
    f_.conv = ConvShape{f_.shape.n_embd, static_cast<std::uint32_t>(kernel), static_cast<std::uint32_t>(group)};
    return Status::success();
  }

  const ModelView& t_;
  DFlashFile& f_;
};

}  // namespace

Expected<std::shared_ptr<const DFlashFile>> DFlashFile::open(const DrafterHost& host, const std::string& path) {
  auto file = host.open_file(path);
  if (!file) return std::move(file).status();
  auto f = std::make_shared<DFlashFile>();
  f->file = std::move(*file);
  f->path = f->file->path();
  GRAFT_TRY(Loader(host, *f).load());
  return std::shared_ptr<const DFlashFile>(std::move(f));
}

}  // namespace graft::dflash2
