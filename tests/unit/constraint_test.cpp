// Structured output (genai/constraint.h, genai/gbnf.h): token bytes, masks over
// real vocabularies driven by random walks (every allowed token equally
// likely, as a random-weight model would choose), EOS exactly when the text
// is complete, GBNF translation, and bad constraints refused with where.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <random>
#include <regex>

#include <nlohmann/json.hpp>

#include "genai/constraint.h"
#include "genai/gbnf.h"
#include "nested_text.h"
#include "genai/sampling.h"

namespace ember::genai {
namespace {

const std::string kTokenizers = EMBER_TOKENIZERS_DIR;

Tokenizer load_tokenizer(const std::string& name) {
  auto t = Tokenizer::from_file(kTokenizers + "/" + name + "/tokenizer.json");
  EXPECT_TRUE(t.is_ok()) << t.status().to_string();
  return std::move(*t);
}

// Qwen2.5: 151,665 tokenizer ids, 151,936 logits, two EOS ids.
struct Qwen {
  Tokenizer tokenizer = load_tokenizer("qwen2_5");
  std::vector<int64_t> eos{151643, 151645};
  int64_t model_vocab = 151936;
  std::shared_ptr<const ConstraintVocabulary> vocabulary;
  Qwen() {
    const auto start = std::chrono::steady_clock::now();
    auto v = ConstraintVocabulary::create(tokenizer, eos, model_vocab);
    EXPECT_TRUE(v.is_ok()) << v.status().to_string();
    vocabulary = *v;
    std::printf("Qwen2.5 constraint vocabulary: %.0f ms\n",
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
};

Qwen& qwen() {
  static Qwen q;
  return q;
}

std::shared_ptr<const Constraint> compile(ConstraintKind kind, const std::string& text) {
  auto c = Constraint::compile(qwen().vocabulary, {kind, text, "test"});
  EXPECT_TRUE(c.is_ok()) << c.status().to_string();
  return c.is_ok() ? *c : nullptr;
}

struct Walk {
  std::string text;
  std::vector<int64_t> tokens;
  bool ended_with_eos = false;
  bool complete = false;
  std::string error;
};

// Chooses uniformly among the tokens the mask allows, until EOS or max_steps.
// `check` hears the text so far and whether EOS was allowed, before each choice.
template <typename Check>
Walk random_walk(const Constraint& constraint, uint64_t seed, int max_steps, bool overlap, Check check) {
  const Qwen& q = qwen();
  std::unique_ptr<GrammarMask> mask = constraint.make_mask(overlap);
  std::mt19937_64 rng(seed);
  std::vector<float> logits(static_cast<size_t>(q.model_vocab));
  std::vector<TokenData> list;
  std::vector<int64_t> history, allowed;
  Walk w;
  for (int step = 0; step < max_steps; ++step) {
    std::fill(logits.begin(), logits.end(), 0.0f);
    SamplingStep s(logits, history, list);
    mask->apply(s);
    allowed.clear();
    bool eos_allowed = false;
    for (size_t i = 0; i < logits.size(); ++i) {
      if (logits[i] == -INFINITY) continue;
      allowed.push_back(static_cast<int64_t>(i));
      if (q.vocabulary->is_eos(static_cast<int64_t>(i))) eos_allowed = true;
      EXPECT_LT(static_cast<int64_t>(i), q.tokenizer.vocab_size()) << "an id the tokenizer lacks is allowed";
    }
    check(w.text, eos_allowed);
    if (allowed.empty()) {
      ADD_FAILURE() << "the mask allows nothing after " << w.text;
      break;
    }
    const int64_t token = allowed[std::uniform_int_distribution<size_t>(0, allowed.size() - 1)(rng)];
    mask->accept(token);
    history.push_back(token);
    if (q.vocabulary->is_eos(token)) {
      w.ended_with_eos = true;
      break;
    }
    w.tokens.push_back(token);
    w.text += q.tokenizer.token_bytes(static_cast<int32_t>(token));
  }
  w.complete = mask->complete();
  w.error = mask->failure();
  return w;
}

Walk random_walk(const Constraint& constraint, uint64_t seed, int max_steps = 400, bool overlap = true) {
  return random_walk(constraint, seed, max_steps, overlap, [](const std::string&, bool) {});
}

TEST(TokenBytes, ConcatenatedTheyAreTheText) {
  const std::vector<std::string> texts = {"Hello, world!", "naïve café — 日本語 🎉", "  two  spaces\n\ttab",
                                          "{\"a\": [1, 2.5e-3], \"b\": null}"};
  for (const char* name : {"qwen2_5", "llama2", "gemma3"}) {  // byte-level; SentencePiece; Replace and added "▁▁"
    const Tokenizer t = load_tokenizer(name);
    for (const std::string& text : texts) {
      std::string joined;
      for (int32_t id : t.encode(text, /*add_special=*/false)) joined += t.token_bytes(id);
      // SentencePiece-style tokenizers put a space (▁) before the first word.
      EXPECT_TRUE(joined == text || joined == " " + text) << name << ": '" << joined << "' for '" << text << "'";
    }
  }
}

TEST(Constraint, JsonSchemaWalksAreValidDocuments) {
  const std::string schema = R"({
    "type": "object",
    "properties": {
      "color": {"enum": ["red", "green", "blue"]},
      "count": {"type": "integer", "minimum": -5, "maximum": 40},
      "name": {"type": "string", "maxLength": 8},
      "tags": {"type": "array", "items": {"type": "boolean"}, "minItems": 1, "maxItems": 3}
    },
    "required": ["color", "count", "name", "tags"],
    "additionalProperties": false
  })";
  auto c = compile(ConstraintKind::kJsonSchema, schema);
  ASSERT_TRUE(c);
  for (uint64_t seed = 0; seed < 12; ++seed) {
    const Walk w = random_walk(*c, seed);
    ASSERT_TRUE(w.ended_with_eos && w.complete && w.error.empty()) << seed << ": " << w.text << " " << w.error;
    const nlohmann::json doc = nlohmann::json::parse(w.text, nullptr, false);
    ASSERT_FALSE(doc.is_discarded()) << w.text;
    EXPECT_EQ(doc.size(), 4u) << w.text;
    const std::string color = doc.at("color");
    EXPECT_TRUE(color == "red" || color == "green" || color == "blue") << w.text;
    EXPECT_TRUE(doc.at("count").is_number_integer() && doc["count"] >= -5 && doc["count"] <= 40) << w.text;
    EXPECT_LE(doc.at("name").get<std::string>().size(), 8u * 4) << w.text;
    EXPECT_TRUE(doc.at("tags").size() >= 1 && doc["tags"].size() <= 3) << w.text;
  }
}

TEST(Constraint, EosIsAllowedExactlyWhenTheTextMatches) {
  const std::string pattern = "[0-9]{2,4}(-[a-z]{1,3})?";
  const std::regex re(pattern);
  auto c = compile(ConstraintKind::kRegex, pattern);
  ASSERT_TRUE(c);
  for (uint64_t seed = 0; seed < 20; ++seed) {
    const Walk w = random_walk(*c, seed, 64, true, [&](const std::string& text, bool eos_allowed) {
      EXPECT_EQ(eos_allowed, std::regex_match(text, re)) << "'" << text << "'";
    });
    EXPECT_TRUE(w.ended_with_eos && w.complete) << w.text;
    EXPECT_TRUE(std::regex_match(w.text, re)) << w.text;
  }
}

TEST(Constraint, OverlappedAndInlineMasksAgree) {
  auto c = compile(ConstraintKind::kJsonObject, "");
  ASSERT_TRUE(c);
  for (uint64_t seed = 0; seed < 4; ++seed) {
    const Walk a = random_walk(*c, seed, 60, /*overlap=*/true);
    const Walk b = random_walk(*c, seed, 60, /*overlap=*/false);
    EXPECT_EQ(a.tokens, b.tokens);
    ASSERT_FALSE(a.tokens.empty());
    EXPECT_EQ(a.text[0], '{');
  }
}

TEST(Constraint, SamplerChainDrivesTheMask) {
  auto c = compile(ConstraintKind::kRegex, "(yes|no), [a-z]{3} [0-9]{1,2}");
  ASSERT_TRUE(c);
  const std::regex re("(yes|no), [a-z]{3} [0-9]{1,2}");
  std::mt19937 rng(7);
  std::normal_distribution<float> noise(0.0f, 3.0f);
  for (uint64_t seed = 0; seed < 6; ++seed) {
    SamplingParams params;
    params.greedy = false;
    params.temperature = 1.0f;
    params.top_p = 0.95f;
    params.seed = seed;
    Sampler sampler(params);
    sampler.chain().prepend(c->make_mask());
    std::vector<int64_t> history;
    std::string text;
    std::vector<float> logits(static_cast<size_t>(qwen().model_vocab));
    for (int step = 0; step < 40; ++step) {
      for (float& l : logits) l = noise(rng);
      const int64_t token = sampler.sample(logits, history);
      if (qwen().vocabulary->is_eos(token)) break;
      history.push_back(token);
      text += qwen().tokenizer.token_bytes(static_cast<int32_t>(token));
    }
    EXPECT_TRUE(std::regex_match(text, re)) << text;
    EXPECT_EQ(sampler.chain().names().front(), "grammar");
  }
}

TEST(Constraint, AFailedMatcherAllowsOnlyEos) {
  auto c = compile(ConstraintKind::kRegex, "abc");
  ASSERT_TRUE(c);
  std::unique_ptr<GrammarMask> mask = c->make_mask();
  const int32_t z = qwen().tokenizer.token_to_id("z");
  ASSERT_GE(z, 0);
  mask->accept(z);
  EXPECT_NE(mask->failure(), "");
  EXPECT_FALSE(mask->complete());
  std::vector<float> logits(static_cast<size_t>(qwen().model_vocab), 1.0f);
  std::vector<TokenData> list;
  SamplingStep s(logits, {}, list);
  mask->apply(s);
  size_t finite = 0;
  for (size_t i = 0; i < logits.size(); ++i) {
    if (logits[i] != -INFINITY) {
      ++finite;
      EXPECT_TRUE(qwen().vocabulary->is_eos(static_cast<int64_t>(i))) << i;
    }
  }
  EXPECT_GE(finite, 1u);
}

TEST(Constraint, EosBeforeTheEndIsAnError) {
  auto c = compile(ConstraintKind::kRegex, "abc");
  ASSERT_TRUE(c);
  std::unique_ptr<GrammarMask> mask = c->make_mask();
  mask->accept(qwen().eos[1]);
  EXPECT_NE(mask->failure().find("before the document was complete"), std::string::npos) << mask->failure();
}

// Each constraint forces a long text, which llguidance's fast-forward pushes a
// byte at a time, each byte a new lexer state, until its 250,000-state limit:
// 0.85-1.1 s of CPU in a release build, several times the budget. The step
// is cancelled at kMatcherStepBudget, and the sequence can then only end.
TEST(Constraint, AStepPastItsBudgetIsStoppedWithAnError) {
  const std::vector<std::pair<ConstraintKind, std::string>> cases = {
      {ConstraintKind::kRegex, "(a{1000}b{1000}c{1000}d{1000}){100000}"},
      {ConstraintKind::kLark, "start: /((a{100}b{100}){100}c){1000}/"},
      {ConstraintKind::kJsonSchema, R"({"type": "string", "pattern": "^(a{1000}b{1000}){100000}$"})"},
  };
  for (const auto& [kind, text] : cases) {
    for (bool overlap : {false, true}) {
      auto c = compile(kind, text);
      ASSERT_TRUE(c);
      std::unique_ptr<GrammarMask> mask = c->make_mask(overlap);
      std::vector<float> logits(static_cast<size_t>(qwen().model_vocab), 1.0f);
      std::vector<TokenData> list;
      SamplingStep s(logits, {}, list);
      mask->apply(s);
      const std::string budget = "used more than " + std::to_string(kMatcherStepBudget.count()) + " ms of CPU time";
      EXPECT_NE(mask->failure().find(budget), std::string::npos) << text << ": " << mask->failure();
      EXPECT_FALSE(mask->complete());
      for (size_t i = 0; i < logits.size(); ++i) {
        if (logits[i] != -INFINITY) {
          EXPECT_TRUE(qwen().vocabulary->is_eos(static_cast<int64_t>(i))) << text << " " << i;
        }
      }
    }
  }
}

using ember::test::nested;

TEST(Constraint, BadConstraintsAreRefusedWithWhere) {
  struct Case {
    ConstraintKind kind;
    std::string text;
    std::string expect;
  };
  const std::vector<Case> cases = {
      {ConstraintKind::kJsonSchema, "{\"type\": \"object\",\n \"properties\": {,}}", "line 2, column"},
      {ConstraintKind::kJsonSchema, "{\"type\": \"strnig\"}", "strnig"},
      {ConstraintKind::kJsonSchema,
       R"({"type": "object", "properties": {"a/b": {"type": "array", "items": {"anyOf": [{"type": "integer"},
           {"type": "strnig"}]}}}})",
       "invalid json_schema at #/properties/a~1b/items/anyOf/1: Invalid type: strnig"},
      {ConstraintKind::kJsonSchema, "{\"type\": \"integer\", \"minimum\": 5, \"maximum\": 1}", "test: invalid json_schema"},
      {ConstraintKind::kJsonSchema, "42", "must be an object or a boolean"},
      {ConstraintKind::kRegex, "([a-z]", "test: invalid regex"},
      {ConstraintKind::kLark, "start: item\n", "item"},
      {ConstraintKind::kLark, "start: \"a\" | | )\n", "test: invalid lark"},
      {ConstraintKind::kGbnf, "root ::= a\n", "GBNF line 1, column 10: rule 'a' is used but never defined"},
      {ConstraintKind::kGbnf, "root ::= \"x\"\nroot ::= \"y\"\n", "GBNF line 2, column 1: rule 'root' is defined twice"},
      {ConstraintKind::kGbnf, "root ::= [a-\n", "GBNF line 1, column 10"},
      {ConstraintKind::kGbnf, "root ::= \"a\" {3,1}\n", "below its minimum"},
      {ConstraintKind::kGbnf, "main ::= \"a\"\n", "no 'root' rule"},
      {ConstraintKind::kGbnf, "root ::= \"a\" junk ::= \"b\"\n", "line 1, column 19"},
      // Nesting deep enough to overflow a recursive parser's stack is refused by name.
      {ConstraintKind::kGbnf, "root ::= " + std::string(100000, '(') + "\"a\"" + std::string(100000, ')') + "\n",
       "GBNF line 1, column 266: groups nest more than 256 deep"},
      {ConstraintKind::kJsonSchema, nested("{\"items\": ", "{}", "}", 100000),
       "test: the JSON Schema nests arrays and objects more than 128 deep (at byte 1280)"},
      {ConstraintKind::kRegex, std::string(100000, '(') + "a" + std::string(100000, ')'), "test: invalid regex"},
      // A rule root reaches that no finite text matches.
      {ConstraintKind::kGbnf, "root ::= expr\nexpr ::= \"(\" expr \")\"\n",
       "GBNF line 2, column 1: rule 'expr' can never end: every way through it needs a rule that cannot end"},
      {ConstraintKind::kGbnf, "root ::= \"a\" | x\nx ::= \"(\" y\ny ::= x \")\"\n", "rule 'x' can never end"},
      {ConstraintKind::kGbnf, "root ::= \"a\" x+\nx ::= \"b\" x{1,3}\n", "rule 'x' can never end"},
  };
  for (const Case& k : cases) {
    auto c = Constraint::compile(qwen().vocabulary, {k.kind, k.text, "test"});
    ASSERT_FALSE(c.is_ok()) << k.text.substr(0, 80);
    EXPECT_NE(c.status().message().find(k.expect), std::string::npos)
        << "'" << k.text.substr(0, 80) << "': " << c.status().message().substr(0, 300);
  }
}

// Recursion with a way out is fine: an alternative, or an element that may match nothing.
TEST(Gbnf, RecursiveRulesThatCanEndAreAccepted) {
  for (const char* gbnf : {"root ::= x\nx ::= \"(\" x \")\" | \"a\"\n", "root ::= \"(\" root? \")\"\n",
                           "root ::= (\"(\" root)* \"a\"\n", "root ::= \"a\" root{0,3}\n",
                           "root ::= (\"a\" root | )\n", "root ::= \"b\" | \"a\" root \"c\"\n"}) {
    auto lark = gbnf_to_lark(gbnf);
    EXPECT_TRUE(lark.is_ok()) << gbnf << ": " << lark.status().to_string();
  }
}

TEST(Gbnf, TranslatesToLark) {
  const std::string gbnf = R"(# comment
root ::= "{" ws pair ("," ws pair)* "}"   # trailing comment
pair ::= Key ":" ws ( "-"? [0-9]+ | "null" ) ws
Key  ::= "\"" [^"\\\x00-\x1F]{1,8} "\""
ws   ::= | " " | "\n" [ \t]{0,4}
)";
  auto lark = gbnf_to_lark(gbnf);
  ASSERT_TRUE(lark.is_ok()) << lark.status().to_string();
  EXPECT_EQ(*lark,
            "start: g_root\n"
            "g_root: \"{\" g_ws g_pair (\",\" g_ws g_pair)* \"}\"\n"
            "g_pair: g_key \":\" g_ws (\"-\"? /[\\x{30}-\\x{39}]/+ | \"null\") g_ws\n"
            "g_key: \"\\\"\" /[^\\x{22}\\x{5C}\\x{0}-\\x{1F}]/{1,8} \"\\\"\"\n"
            "g_ws: (\" \" | \"\\n\" /[\\x{20}\\x{9}]/{0,4})?\n");
  EXPECT_TRUE(looks_like_gbnf(gbnf));
  EXPECT_FALSE(looks_like_gbnf("// lark\nstart: \"a\"\n"));
}

TEST(Gbnf, WalksStayInTheGrammar) {
  const std::string gbnf = R"(root ::= item ("," item){0,3}
item ::= [a-c]{1,3} "=" "-"? ( "yes" | "no" | [0-9] )
)";
  auto c = compile(ConstraintKind::kGbnf, gbnf);
  ASSERT_TRUE(c);
  const std::regex re("[a-c]{1,3}=-?(yes|no|[0-9])(,[a-c]{1,3}=-?(yes|no|[0-9])){0,3}");
  for (uint64_t seed = 0; seed < 10; ++seed) {
    const Walk w = random_walk(*c, seed, 80);
    EXPECT_TRUE(w.ended_with_eos && w.complete) << w.text << " " << w.error;
    EXPECT_TRUE(std::regex_match(w.text, re)) << w.text;
  }
}

}  // namespace
}  // namespace ember::genai
