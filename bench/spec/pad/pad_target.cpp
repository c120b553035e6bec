// pad_target: a cost-realistic benchmark target from a small model (inert_padding.hpp): N inert
// layers after its last main layer, so a decode step reads as many weights as a real model's
// while the output, the MTP head and the DFlash taps stay the original's. bench/spec/make_padded.sh
// runs it on the zoo model; docs/benchmarks.md and bench/spec/README.md say what it is for.
//
//   pad_target --in models/zoo-qwen3-4x256.gguf --out zoo-padded.gguf [--inert 44]
#include <cstdio>
#include <string>

#include "bench_options.hpp"
#include "inert_padding.hpp"

int main(int argc, char** argv) {
  namespace po = boost::program_options;
  std::string in, out;
  std::uint32_t inert = 44;
  po::options_description opts("pad_target --in FILE --out FILE [--inert N]");
  opts.add_options()("help,h", "this help")("in", po::value(&in)->required(), "the model GGUF")(
      "out", po::value(&out)->required(), "the padded GGUF to write")(
      "inert", po::value(&inert)->default_value(inert), "inert layers to add (0..1024)");
  po::variables_map vm;
  try {
    po::store(po::parse_command_line(argc, argv, opts), vm);
    if (vm.count("help")) {
      std::cout << opts;
      return 0;
    }
    po::notify(vm);
  } catch (const po::error& e) {
    std::fprintf(stderr, "pad_target: %s\n", e.what());
    return 2;
  }
  if (inert > 1024) {
    std::fprintf(stderr, "pad_target: --inert %u is more than 1024\n", inert);
    return 2;
  }
  auto r = graft::bench::pad_with_inert_layers(in, out, inert);
  if (!r) {
    std::fprintf(stderr, "pad_target: %s\n", r.status().message().c_str());
    return 1;
  }
  std::printf("%s: %u main layers + %u inert (copies of layer %u, attn_output and ffn_down zero, %.1f MiB added)%s\n",
              out.c_str(), r->main_layers, inert, r->main_layers - 1, double(r->bytes_added) / (1 << 20),
              r->nextn_layers ? ", then the nextn block(s)" : "");
  return 0;
}
