/* llama.cpp's own quantizer (llama_model_quantize in the prebuilt libllama that node-llama-cpp ships),
 * so the cross-check can run graft on files "quantized by llama.cpp" without building llama.cpp.
 *
 *   llamacpp_quantize LIBLLAMA IN.gguf OUT.gguf FTYPE [--pure] [--output-type T] [--embd-type T] [-t N]
 *
 * FTYPE: f32 f16 bf16 q8_0 q4_0 q1_0 q2_0 tq1_0 tq2_0 q2_k q3_k_s q3_k_m q4_k_s q4_k_m q5_k_m q6_k
 * (llama_ftype names, lower case); T: a ggml type name (f32 f16 q8_0 q4_0 q6_k ...).
 * --pure quantizes every 2-D tensor to FTYPE's base type (llama-quantize --pure).
 *
 * The parameter struct is declared here, field for field as in llama.h of llama.cpp release v0.4.0
 * (the version node-llama-cpp 3.21.1 pins; check_binary.mjs verifies the release), because the
 * package ships no headers. Built by compare_quantized.sh with the system C compiler. */
#include <dlfcn.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  int32_t nthread;
  int32_t ftype;
  int32_t output_tensor_type;
  int32_t token_embedding_type;
  bool allow_requantize;
  bool quantize_output_tensor;
  bool only_copy;
  bool pure;
  bool keep_split;
  bool dry_run;
  const void* imatrix;
  const void* kv_overrides;
  const void* tt_overrides;
  const int32_t* prune_layers;
  size_t max_buf_size;
} quantize_params;

typedef quantize_params (*default_params_fn)(void);
typedef uint32_t (*quantize_fn)(const char*, const char*, const quantize_params*);
typedef void (*void_fn)(void);

struct named {
  const char* name;
  int value;
};

static const struct named kFtypes[] = {
    {"f32", 0},     {"f16", 1},     {"q4_0", 2},    {"q8_0", 7},    {"q2_k", 10},   {"q3_k_s", 11},
    {"q3_k_m", 12}, {"q4_k_s", 14}, {"q4_k_m", 15}, {"q5_k_m", 17}, {"q6_k", 18},   {"bf16", 32},
    {"tq1_0", 36},  {"tq2_0", 37},  {"q1_0", 40},   {"q2_0", 41},   {NULL, 0}};
static const struct named kTypes[] = {
    {"f32", 0},   {"f16", 1},   {"q4_0", 2},   {"q8_0", 8},   {"q2_k", 10}, {"q3_k", 11}, {"q4_k", 12},
    {"q5_k", 13}, {"q6_k", 14}, {"bf16", 30},  {"tq1_0", 34}, {"tq2_0", 35}, {"q1_0", 41}, {"q2_0", 42},
    {NULL, 0}};

static int lookup(const struct named* table, const char* what, const char* name) {
  for (; table->name; ++table)
    if (strcmp(table->name, name) == 0) return table->value;
  fprintf(stderr, "llamacpp_quantize: unknown %s '%s'\n", what, name);
  exit(2);
}

int main(int argc, char** argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: llamacpp_quantize LIBLLAMA IN OUT FTYPE [--pure] [--output-type T] [--embd-type T] [-t N]\n");
    return 2;
  }
  void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    fprintf(stderr, "llamacpp_quantize: %s\n", dlerror());
    return 2;
  }
  default_params_fn defaults = (default_params_fn)dlsym(lib, "llama_model_quantize_default_params");
  quantize_fn quantize = (quantize_fn)dlsym(lib, "llama_model_quantize");
  void_fn init = (void_fn)dlsym(lib, "llama_backend_init");
  if (!defaults || !quantize || !init) {
    fprintf(stderr, "llamacpp_quantize: %s lacks the llama_model_quantize API\n", argv[1]);
    return 2;
  }
  quantize_params p = defaults();
  p.ftype = lookup(kFtypes, "ftype", argv[4]);
  for (int i = 5; i < argc; ++i) {
    if (strcmp(argv[i], "--pure") == 0) {
      p.pure = true;
    } else if (i + 1 < argc && strcmp(argv[i], "--output-type") == 0) {
      p.output_tensor_type = lookup(kTypes, "type", argv[++i]);
    } else if (i + 1 < argc && strcmp(argv[i], "--embd-type") == 0) {
      p.token_embedding_type = lookup(kTypes, "type", argv[++i]);
    } else if (i + 1 < argc && strcmp(argv[i], "-t") == 0) {
      p.nthread = atoi(argv[++i]);
    } else {
      fprintf(stderr, "llamacpp_quantize: unknown argument '%s'\n", argv[i]);
      return 2;
    }
  }
  init();
  const uint32_t rc = quantize(argv[2], argv[3], &p);
  if (rc != 0) fprintf(stderr, "llamacpp_quantize: llama_model_quantize failed (%u)\n", rc);
  return rc == 0 ? 0 : 1;
}
