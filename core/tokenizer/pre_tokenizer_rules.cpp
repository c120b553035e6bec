// The regex lists per tokenizer.ggml.pre value. Sources: llama.cpp src/llama-vocab.cpp
// (llm_tokenizer_bpe constructor and the name -> type table in llama_vocab::impl::load) and the
// tokenizer.json files those lists were taken from. Where llama.cpp rewrote a HuggingFace regex
// for std::regex (no \p{Lu}, no (?i:...), no possessive quantifiers) we use the HuggingFace
// original, which PCRE2 runs as written; the results agree with HF tokenizers (Oniguruma).
// Non-ASCII ranges are written as \x{...} so no editor can normalize them into other characters.
#include "tokenizer/pre_tokenizer.hpp"

namespace graft {
namespace {

// GPT-2 (HF ByteLevel use_regex=true). llama.cpp drops the final \s+; text it would match is a
// gap between matches and becomes its own piece anyway, so both split identically.
constexpr std::string_view kGpt2 = R"re('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)re";

// Llama 3 (tiktoken cl100k style): case-insensitive contractions, digits in groups of 1-3.
constexpr std::string_view kLlama3 =
    R"re((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";

// Qwen2: as Llama 3 but single digits.
constexpr std::string_view kQwen2 =
    R"re((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";

// Qwen3.5: combining marks (\p{M}) stay with the letters they follow.
constexpr std::string_view kQwen35 =
    R"re((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";

// CJK unified ideographs U+4E00-U+9FA5, U+0800-U+4E00 and Hangul U+AC00-U+D7FF ("[一-龥ࠀ-一가-퟿]+").
constexpr std::string_view kDeepseekCjk = R"re([\x{4E00}-\x{9FA5}\x{0800}-\x{4E00}\x{AC00}-\x{D7FF}]+)re";

// Cased letters of the deepseek-llm tokenizer.json class "[A-Za-zµÀ-ÖØ-öø-ƺ...𞤀-𞥃]".
constexpr std::string_view kDeepseekLlmLetters =
    R"re(\s?[A-Za-z\x{B5}\x{C0}-\x{D6}\x{D8}-\x{F6}\x{F8}-\x{1BA}\x{1BC}-\x{1BF}\x{1C4}-\x{293}\x{295}-\x{2AF})re"
    R"re(\x{370}-\x{373}\x{376}\x{377}\x{37B}-\x{37D}\x{37F}\x{386}\x{388}-\x{38A}\x{38C}\x{38E}-\x{3A1})re"
    R"re(\x{3A3}-\x{3F5}\x{3F7}-\x{481}\x{48A}-\x{52F}\x{531}-\x{556}\x{10A0}-\x{10C5}\x{13A0}-\x{13F5})re"
    R"re(\x{13F8}-\x{13FD}\x{1C90}-\x{1CBA}\x{1CBD}-\x{1CBF}\x{1D00}-\x{1D2B}\x{1D6B}-\x{1D77}\x{1D79}-\x{1D9A})re"
    R"re(\x{1E00}-\x{1F15}\x{1F18}-\x{1F1D}\x{1F20}-\x{1F45}\x{1F48}-\x{1F4D}\x{1F50}-\x{1F57}\x{1F59}\x{1F5B})re"
    R"re(\x{1F5D}\x{1F5F}-\x{1F7D}\x{1F80}-\x{1FB4}\x{1FB6}-\x{1FBC}\x{1FBE}\x{1FC2}-\x{1FC4}\x{1FC6}-\x{1FCC})re"
    R"re(\x{1FD0}-\x{1FD3}\x{1FD6}-\x{1FDB}\x{1FE0}-\x{1FEC}\x{1FF2}-\x{1FF4}\x{1FF6}-\x{1FFC}\x{2102}\x{2107})re"
    R"re(\x{210A}-\x{2113}\x{2115}\x{2119}-\x{211D}\x{2124}\x{2126}\x{2128}\x{212A}-\x{212D}\x{212F}-\x{2134})re"
    R"re(\x{2139}\x{213C}-\x{213F}\x{2145}-\x{2149}\x{214E}\x{2183}\x{2184}\x{2C00}-\x{2C7B}\x{2C7E}-\x{2CE4})re"
    R"re(\x{2CEB}-\x{2CEE}\x{2CF2}\x{2CF3}\x{A640}-\x{A66D}\x{A680}-\x{A69B}\x{A722}-\x{A76F}\x{A771}-\x{A787})re"
    R"re(\x{A78B}-\x{A78E}\x{AB70}-\x{ABBF}\x{FB00}-\x{FB06}\x{FB13}-\x{FB17}\x{FF21}-\x{FF3A}\x{FF41}-\x{FF5A})re"
    R"re(\x{10400}-\x{1044F}\x{104B0}-\x{104D3}\x{104D8}-\x{104FB}\x{10C80}-\x{10CB2}\x{10CC0}-\x{10CF2})re"
    R"re(\x{118A0}-\x{118DF}\x{1E900}-\x{1E943}]+)re";

// "\s?[!-/:-~！-／：-～‘-‟　-。]+": ASCII punctuation, its fullwidth forms, quotes, CJK marks.
constexpr std::string_view kDeepseekLlmPunct =
    R"re(\s?[!-/:-~\x{FF01}-\x{FF0F}\x{FF1A}-\x{FF5E}\x{2018}-\x{201F}\x{3000}-\x{3002}]+)re";

// DeepSeek V3: CJK ideographs and kana ("[一-龥぀-ゟ゠-ヿ]+").
constexpr std::string_view kCjkKana = R"re([\x{4E00}-\x{9FA5}\x{3040}-\x{309F}\x{30A0}-\x{30FF}]+)re";
constexpr std::string_view kDeepseekV3Main =
    R"re([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";
constexpr std::string_view kSpark25Main =
    R"re([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+|[\r\n]|\s+(?!\S)|\s+)re";

// BLOOM / Poro: " ?[^(\s|.,!?…。，、।۔،)]+".
constexpr std::string_view kBloom =
    R"re( ?[^(\s|.,!?\x{2026}\x{3002}\x{FF0C}\x{3001}\x{0964}\x{06D4}\x{060C})]+)re";

// Mistral Tekken and GPT-4o (o200k): case-aware words, the latter with trailing contractions.
constexpr std::string_view kTekken =
    R"re([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";
constexpr std::string_view kGpt4o =
    R"re([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";

constexpr std::string_view kBailingMoe =
    R"re('(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+)re";
constexpr std::string_view kSeedCoder =
    R"re((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1}| ?[^\s\p{L}\p{N}\r\n]+|\s*[\r\n]+|\s+(?!\S)|\s+)re";
constexpr std::string_view kUfakzeka =
    R"re([^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";
constexpr std::string_view kExaoneMoe =
    R"re((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?(?:\p{L}\p{M}*(?: \p{L}\p{M}*)*)+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]?|\s*[\r\n]|\s+(?!\S)|\s+)re";
constexpr std::string_view kMiniCpm5 =
    R"re((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}+| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";
constexpr std::string_view kJais2 =
    R"re((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s{512}(?!\S)|\s{256}(?!\S)|\s{128}(?!\S)|\s{64}(?!\S)|\s{32}(?!\S)|\s{16}(?!\S)|\s{8}(?!\S)|\s{4}(?!\S)|\s{1,2}(?!\S)|\s{1})re";

std::vector<PreTokenizerRule> make_rules() {
  std::vector<PreTokenizerRule> r;
  // Absent or "default": GPT-2's regex (llama.cpp instead applies a falcon-like list here; see
  // docs/tokenizers.md).
  r.push_back({{"default"}, {kGpt2}});
  r.push_back({{"gpt-2", "gpt-neox", "mpt", "olmo", "jais", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v2-es",
                "jina-v2-de", "jina-v1-en", "jina-v2-code", "roberta-bpe", "a.x-4.0", "mellum", "modern-bert",
                "trillion", "granite-docling", "exaone4"},
               {kGpt2}});
  r.push_back({{"llama3", "llama-bpe", "llama-v3", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2", "jina-v5-nano"},
               {kLlama3},
               /*ignore_merges=*/true,
               /*add_bos=*/true});
  r.push_back({{"dbrx", "smaug-bpe", "chatglm-bpe", "glm4"}, {kLlama3}});
  r.push_back({{"qwen2", "deepseek-r1-qwen", "stablelm2", "megrez", "hunyuan", "solar-open", "grok-2", "kormo", "f2llmv2"},
               {kQwen2}});
  r.push_back({{"qwen35"}, {kQwen35}});
  r.push_back({{"deepseek-llm"},
               {R"re([\r\n])re", kDeepseekLlmLetters, kDeepseekLlmPunct, R"re(\s+$)re", kDeepseekCjk, R"re(\p{N}+)re"}});
  r.push_back({{"deepseek-coder"},
               {R"re([\r\n])re", R"re(\s?\p{L}+)re", R"re(\s?\p{P}+)re", kDeepseekCjk, R"re(\p{N})re"}});
  r.push_back({{"deepseek-v3", "hunyuan-dense", "joyai-llm", "hy_v4"}, {R"re(\p{N}{1,3})re", kCjkKana, kDeepseekV3Main}});
  r.push_back({{"spark2_5"}, {R"re(\p{N}{1,3})re", kCjkKana, kSpark25Main, R"re(\p{N})re"}});
  r.push_back({{"falcon"}, {R"re([\p{P}\$\+<=>\^~\|`]+)re", kGpt2, R"re([0-9][0-9][0-9])re"}});
  r.push_back({{"starcoder", "refact", "command-r", "smollm", "codeshell", "exaone", "minerva-7b", "mellum2"},
               {R"re(\p{N})re", kGpt2}});
  r.push_back({{"bloom", "poro-chat", "gpt3-finnish"}, {kBloom}});
  r.push_back({{"viking"}, {kBloom, R"re(\p{N})re"}});
  r.push_back({{"tekken"}, {kTekken}, /*ignore_merges=*/true, /*add_bos=*/true});
  r.push_back({{"gpt-4o", "llama4", "minimax-m2", "kanana2", "talkie"}, {kGpt4o}});
  // tokenizer.json has \d{1,3}(?=(?:\d{3})*\b). After a digit, \b means "no word character
  // next". The Unicode (UTS #18) word class includes marks and joiners, PCRE2 10.42's \w does
  // not, so it is spelled out.
  r.push_back({{"tiny_aya", "cohere2moe"},
               {R"re(\d{1,3}(?=(?:\d{3})*(?![\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\x{200C}\x{200D}])))re", kGpt4o}});
  r.push_back({{"chameleon"},
               {R"re(<sentinel:[0-9]+>)re", R"re((IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z)re", "([\t\n]|    |  )",
                R"re(\p{N})re", R"re([\p{P}!-/:-@\[-`{-~])re", kGpt2},
               /*ignore_merges=*/false,
               /*add_bos=*/true});
  r.push_back({{"superbpe"}, {R"re(\p{N}+)re", R"re((?=(\d{3})+(?!\d)))re"}});
  r.push_back({{"bailingmoe", "bailingmoe2", "llada-moe"}, {kBailingMoe}});
  r.push_back({{"seed-coder"}, {kSeedCoder}});
  r.push_back({{"ufakzeka"}, {kUfakzeka}});
  r.push_back({{"laguna"}, {R"re([^\n]+|[\n]+)re", kQwen2}});
  r.push_back({{"exaone-moe"}, {kExaoneMoe}});
  r.push_back({{"minicpm5"}, {R"re(\p{N}{1,3})re", kMiniCpm5}, /*ignore_merges=*/true});
  r.push_back({{"jais-2"}, {kJais2}});
  return r;
}

}  // namespace

const std::vector<PreTokenizerRule>& pre_tokenizer_rules() {
  static const std::vector<PreTokenizerRule> rules = make_rules();
  return rules;
}

}  // namespace graft
