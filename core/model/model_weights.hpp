// The weights of a llama/qwen3 model as views into the mapped GGUF file, each bound to the
// weight-format kernels that multiply by it on the chosen backend. Binding happens at load time,
// so a format without kernels for the backend is an error before the first token, never a
// silent fallback mid-generation.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "graft/backend.hpp"
#include "graft/host.hpp"
#include "graft/weight_format.hpp"
#include "gguf/gguf_file.hpp"
#include "model/architecture.hpp"
#include "model/model_params.hpp"

namespace graft {

class StackedBytes;

// A matrix [k = ne[0], m = ne[1]] used as y = x W^T.
struct MatrixWeight {
  std::string name;
  TensorView view;
  FormatKernels* kernels = nullptr;
  std::uint64_t bytes = 0;
  // The kernels' own layout of view, made at load where they have one (FormatKernels::prepare);
  // shared because a tied output matrix is the token embedding again.
  std::shared_ptr<const PreparedWeights> prepared;
  // Where view.data lives when it is not the file: the rows of several matrices stacked
  // (stacked_matrix.hpp).
  std::shared_ptr<StackedBytes> storage;
};

// A vector (norm weight) as f32, converted at load time if the file stores another type.
struct VectorWeight {
  std::string name;
  std::vector<float> owned;  // used when the file's type is not f32
  TensorView view;
  // Where view.data lives on a backend that cannot read host memory: uploaded at load.
  std::shared_ptr<Buffer> device;
};

// One transformer block (every kind: LayerKind). Shapes as GGUF stores them, [ne0 = k, ne1 = m] for a matrix used as
// y = x W^T; E = n_embd, D = head_dim, H = n_head, HKV = n_head_kv, F = n_ff.
struct LayerWeights {
  LayerKind kind = LayerKind::attention;
  VectorWeight attn_norm;  // [E]
  VectorWeight ffn_norm;   // [E]
  VectorWeight q_norm;     // [D] (qwen3)
  VectorWeight k_norm;     // [D] (qwen3)
  MatrixWeight wq;         // [E, H*D]
  MatrixWeight wk;         // [E, HKV*D]
  MatrixWeight wv;         // [E, HKV*D]
  MatrixWeight wo;         // [H*D, E]
  MatrixWeight w_gate;     // [E, F]
  MatrixWeight w_up;       // [E, F]
  MatrixWeight w_down;     // [F, E]
  // wq, wk, wv stacked ([E, (H + 2*HKV)*D]), and w_gate, w_up stacked ([E, 2F]), where the load
  // stacked them (their type and kernels agree); kernels == nullptr otherwise. The forward pass
  // multiplies by these instead of the parts, whose file pages are then released.
  MatrixWeight wqkv, w_gate_up;

  // gated_attention: wq is [E, 2*H*D], each head's query then its output gate (qwen35).
  // delta_net (C = 2*Hk*Dk + Hv*Dv channels, Kc conv taps; shared/reference/qwen35.md):
  MatrixWeight ssm_in;     // attn_qkv [E, C]: q | k | v before the convolution
  MatrixWeight ssm_gate;   // attn_gate [E, Hv*Dv]: z, the output norm's gate
  MatrixWeight ssm_beta;   // [E, Hv]
  MatrixWeight ssm_alpha;  // [E, Hv]
  MatrixWeight ssm_out;    // [Hv*Dv, E]
  VectorWeight ssm_conv;   // ssm_conv1d [Kc, C], f32
  VectorWeight ssm_dt_bias, ssm_a;  // [Hv]; ssm_a = -exp(A_log)
  VectorWeight ssm_norm;   // [Dv], shared by the heads
  bool qkv_stacked() const { return wqkv.kernels != nullptr; }
  bool gate_up_stacked() const { return w_gate_up.kernels != nullptr; }
};

// The view of a tensor in the mapped file; block_bytes is its type's block size (nb[0]).
TensorView weight_view(const gguf::TensorInfo& t, std::uint32_t block_bytes);

struct ModelWeights {
  MatrixWeight token_embd;   // [E, V]
  MatrixWeight output;       // [E, V]; token_embd again when tied
  VectorWeight output_norm;  // [E]
  std::vector<LayerWeights> layers;
  std::uint64_t total_bytes = 0;  // weight bytes the forward pass reads
  // Memory of the copies made at load: the kernels' own layouts (MatrixWeight::prepared) and stacked
  // matrices kept as they are (where the kernels have no layout of their own).
  std::uint64_t prepared_bytes = 0;
  std::uint64_t released_bytes = 0;  // of the file's pages of those matrices, released (gguf::File::release)
  std::vector<const std::uint8_t*> released;  // the data of the tensors whose pages were released

  // The matrices the forward pass multiplies by: the layers' (stacked ones in place of their parts)
  // and the output (not token_embd, of which it only reads rows, so a tied output is prepared once).
  std::vector<MatrixWeight*> matmul_weights();

  // Binds every tensor of the main layers (MTP blocks are left to drafters). Errors name the
  // tensor: missing, wrong shape, or a type no loaded weight-format plugin handles on `backend`.
  // upload = false: norm vectors are not uploaded to a GPU (the memory planner's binding).
  static Expected<ModelWeights> bind(const gguf::File& file, const ModelParams& params, const HostServices& host,
                                     Backend& backend, bool upload = true);
};

// blk.<index>.* of a softmax-attention layer (llama's and qwen3's names) with the dimensions of p.
class TensorBinder;
Status bind_attention_layer(TensorBinder& b, const ModelParams& p, std::uint32_t index, LayerWeights& L);

// blk.<index>.* of a file with the block dimensions of p: a main layer, an MTP (nextn) block, a
// drafter's layer. Not stacked or prepared. Errors name the file and tensor. upload = false: norm
// vectors stay in host memory (the memory planner's binding).
Expected<LayerWeights> bind_layer(const gguf::File& file, const ModelParams& p, std::uint32_t index,
                                  const HostServices& host, Backend& backend, bool upload = true);
// One tensor by name, shaped as the file has it.
Expected<MatrixWeight> bind_matrix(const gguf::File& file, std::string_view name, const HostServices& host,
                                   Backend& backend);
Expected<VectorWeight> bind_vector(const gguf::File& file, std::string_view name, const HostServices& host,
                                   Backend& backend);

}  // namespace graft
