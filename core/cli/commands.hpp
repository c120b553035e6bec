// `graft <command>` entry points. Each takes the arguments after the command name and returns
// the process exit code: 0 success, 1 failure (one-line error on stderr), 2 usage error.
#pragma once

#include <string>
#include <vector>

namespace graft::cli {

using Args = std::vector<std::string>;

int cmd_plugins(const Args& args);   // list discovered plugins
int cmd_profile(const Args& args);   // profile check FILE
int cmd_info(const Args& args);      // GGUF metadata, tensor types and sizes
int cmd_tokenize(const Args& args);  // text -> token ids / pieces
int cmd_run(const Args& args);       // generate text from a prompt
int cmd_plan(const Args& args);      // the memory plan of a profile and model, and whether it fits
int cmd_perplexity(const Args& args);  // llama.cpp-comparable perplexity of a text file
int cmd_bench(const Args& args);     // prefill/decode speed against measured read bandwidth
int cmd_synth(const Args& args);     // write a random-weight model GGUF
int cmd_quantize(const Args& args);  // rewrite a model GGUF in other weight types
int cmd_serve(const Args& args);     // the HTTP server (core/server)

}  // namespace graft::cli
