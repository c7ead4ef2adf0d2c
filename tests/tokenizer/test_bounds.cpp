// The tokenizer's costs bounded where llama.cpp's are not, with llama.cpp's answers kept: the
// special-token partition, the tries' longest and every match, and a GPT-2 piece that is n
// copies of its text. Each hostile shape took minutes before (its ctest TIMEOUT is 120 s);
// each faster way is held to the way it replaced (kept here) on random inputs.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>

#include "../../tokenizer/src/impl.h"
#include "../../tokenizer/src/trie.h"
#include "ggufkit/chat.h"

namespace {

namespace tk = ggufkit::tokenizer;
using Ids = std::vector<int32_t>;

bool c_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'; }

// The partition as llama.cpp's tokenizer_st_partition does it (and as vocab.cpp did): each
// special token in turn searched for in every raw fragment left.
std::vector<tk::Segment> partition_by_search(const tk::Vocab::Impl& v, std::string_view text, bool parse_special) {
  std::vector<tk::Segment> frags{{-1, 0, text.size()}}, next;
  for (int32_t id : v.cache_special_tokens) {
    const tk::TokenData& data = v.id_to_token[static_cast<size_t>(id)];
    if (!parse_special && (data.attr & (tk::attr_control | tk::attr_unknown))) continue;
    const std::string_view tok = data.text;
    next.clear();
    for (const tk::Segment& f : frags) {
      if (f.token != -1) {
        next.push_back(f);
        continue;
      }
      size_t off = f.off, len = f.len;
      while (len > 0) {
        size_t match = text.substr(0, off + len).find(tok, off);
        if (match == std::string_view::npos) {
          next.push_back({-1, off, len});
          break;
        }
        size_t left = match - off;
        if (data.attr & tk::attr_lstrip)
          while (left > 0 && c_space(text[off + left - 1])) --left;
        if (left > 0) next.push_back({-1, off, left});
        next.push_back({id, 0, 0});
        size_t right_off = match + tok.size(), right_len = off + len - right_off;
        if (data.attr & tk::attr_rstrip)
          while (right_len > 0 && c_space(text[right_off])) ++right_off, --right_len;
        off = right_off, len = right_len;
      }
    }
    frags.swap(next);
  }
  return frags;
}

// A vocabulary of these tokens (id = index), its special ones sorted as the load sorts them.
// (Its texts kept by its index, as a loaded vocabulary's are: a token's text is a view of it.)
std::unique_ptr<tk::Vocab::Impl> vocab_of(const std::vector<std::pair<std::string, uint32_t>>& tokens) {
  auto v = std::make_unique<tk::Vocab::Impl>();
  auto index = std::make_shared<tk::TokenIndex>();
  for (const auto& [text, attr] : tokens) index->add(text), v->id_to_token.push_back({{}, 0, attr});
  index->build();
  for (size_t id = 0; id < tokens.size(); ++id) v->id_to_token[id].text = index->key(static_cast<int32_t>(id));
  v->token_to_id = index;
  for (size_t id = 0; id < tokens.size(); ++id)
    if (tokens[id].second & (tk::attr_control | tk::attr_user_defined | tk::attr_unknown)) v->cache_special_tokens.push_back(static_cast<int32_t>(id));
  std::sort(v->cache_special_tokens.begin(), v->cache_special_tokens.end(),
            [&](int32_t a, int32_t b) { return tokens[static_cast<size_t>(a)].first.size() > tokens[static_cast<size_t>(b)].first.size(); });
  return v;
}

std::string random_text(std::mt19937& rng, std::string_view alphabet, size_t most) {
  std::string s(std::uniform_int_distribution<size_t>(1, most)(rng), ' ');
  for (char& c : s) c = alphabet[std::uniform_int_distribution<size_t>(0, alphabet.size() - 1)(rng)];
  return s;
}

TEST(SpecialPartition, OnePassALengthCutsWhatEachTokensOwnSearchCuts) {
  std::mt19937 rng(41);
  const uint32_t kinds[] = {tk::attr_control, tk::attr_user_defined, tk::attr_unknown, tk::attr_normal};
  for (int round = 0; round < 400; ++round) {
    std::set<std::string> seen;
    std::vector<std::pair<std::string, uint32_t>> tokens;
    const int n = std::uniform_int_distribution<int>(1, 12)(rng);
    while (static_cast<int>(tokens.size()) < n) {
      std::string t = random_text(rng, "ab <", 5);
      if (!seen.insert(t).second) continue;
      uint32_t attr = kinds[rng() % 4];
      if (rng() % 3 == 0) attr |= tk::attr_lstrip;
      if (rng() % 3 == 0) attr |= tk::attr_rstrip;
      tokens.push_back({t, attr});
    }
    auto v = vocab_of(tokens);
    for (int k = 0; k < 20; ++k) {
      const std::string text = random_text(rng, "ab <\t", 40);
      for (bool parse : {true, false})
        ASSERT_EQ(tk::partition(*v, text, parse), partition_by_search(*v, text, parse)) << "round " << round << ": '" << text << "'";
    }
  }
}

// 300,000 control tokens <|c000000|> ... and 60 KB of their look-alikes, one real token in the middle.
struct Lookalikes {
  std::unique_ptr<tk::Vocab::Impl> v;
  std::string text;
  size_t real_at;
};
Lookalikes lookalikes() {
  std::vector<std::pair<std::string, uint32_t>> tokens;
  char buf[32];
  for (int i = 0; i < 300000; ++i) {
    std::snprintf(buf, sizeof buf, "<|c%06d|>", i);
    tokens.push_back({buf, tk::attr_control});
  }
  Lookalikes l{vocab_of(tokens), "", 0};
  for (int i = 0; l.text.size() < 60000; ++i) {
    std::snprintf(buf, sizeof buf, "<|c%06d|", i % 300000);  // no closing '>'
    l.text += buf;
    if (i == 3000) l.real_at = l.text.size(), l.text += "<|c123456|>";
  }
  return l;
}

TEST(SpecialPartition, ThreeHundredThousandControlTokensOverSixtyKilobytesOfLookalikesAreOnePass) {
  // each token's own search: 300,000 searches of 60 KB (80 s for validate of such a file)
  const Lookalikes l = lookalikes();
  const std::vector<tk::Segment> want = {{-1, 0, l.real_at}, {123456, 0, 0}, {-1, l.real_at + 11, l.text.size() - l.real_at - 11}};
  EXPECT_EQ(tk::partition(*l.v, l.text, true), want);
  EXPECT_EQ(tk::partition(*l.v, l.text, false), (std::vector<tk::Segment>{{-1, 0, l.text.size()}}));
}

// --- the tries -------------------------------------------------------------------------

// What a byte trie's walk from each position finds (llama.cpp's naive_trie): every key the
// text there starts with, with its last value; and how far the walk goes.
struct Naive {
  std::vector<std::pair<std::string, int32_t>> keys;
  std::vector<std::pair<size_t, int32_t>> starts(std::string_view text) const {
    std::map<size_t, int32_t> found;
    for (const auto& [k, value] : keys)
      if (!k.empty() && text.substr(0, k.size()) == k) found[k.size()] = value;
    return {found.begin(), found.end()};
  }
  size_t walked(std::string_view text) const {
    size_t most = 0;
    for (const auto& [k, value] : keys) {
      size_t i = 0;
      while (i < k.size() && i < text.size() && k[i] == text[i]) ++i;
      most = std::max(most, i);
    }
    return most;
  }
};

TEST(KeyTrie, AWalkAndTheLongKeysFindWhatAByteTrieFindsAtEveryPosition) {
  std::mt19937 rng(7);
  for (int round = 0; round < 300; ++round) {
    Naive naive;
    const int n = std::uniform_int_distribution<int>(1, 30)(rng);
    for (int i = 0; i < n; ++i) {
      // some keys past the walk's 128 bytes, over two letters so that they match
      const size_t most = rng() % 4 == 0 ? 300 : 6;
      naive.keys.push_back({random_text(rng, "ab", most), static_cast<int32_t>(rng() % 1000)});
      if (rng() % 5 == 0) naive.keys.push_back({naive.keys.back().first, static_cast<int32_t>(rng() % 1000)});  // a repeat: the last wins
    }
    std::vector<std::pair<std::string_view, int32_t>> keys;
    for (const auto& [k, value] : naive.keys) keys.push_back({k, value});
    const tk::KeyTrie trie(keys);
    for (int k = 0; k < 5; ++k) {
      const std::string text = rng() % 2 ? random_text(rng, "ab", 400) : std::string(400, 'a');
      const std::vector<tk::KeyTrie::Long> longs = trie.long_keys(text);
      for (size_t at = 0; at < text.size(); ++at) {
        std::vector<std::pair<size_t, int32_t>> got;
        trie.walk(std::string_view(text).substr(at), [&](size_t length, int32_t value) { got.push_back({length, value}); });
        for (const tk::KeyTrie::Long& l : longs)
          if (l.at == at) got.push_back({l.length, l.value});
        std::sort(got.begin(), got.end());
        ASSERT_EQ(got, naive.starts(std::string_view(text).substr(at))) << "round " << round << " at " << at;
        ASSERT_EQ(trie.walk(std::string_view(text).substr(at), [](size_t, int32_t) {}, SIZE_MAX), naive.walked(std::string_view(text).substr(at)));
      }
    }
  }
}

TEST(KeyTrie, AThousandTextsOfTenKilobytesAreAFewThousandNodes) {
  // a byte trie had a node a byte: 10 million, 52 bytes each
  std::vector<std::string> texts;
  std::mt19937 rng(3);
  for (int i = 0; i < 1000; ++i) texts.push_back(random_text(rng, "abcdefgh", 1) + std::string(10000, 'x') + std::to_string(i));
  std::vector<std::pair<std::string_view, int32_t>> keys;
  for (size_t i = 0; i < texts.size(); ++i) keys.push_back({texts[i], static_cast<int32_t>(i)});
  const tk::KeyTrie trie(keys);
  EXPECT_LE(trie.nodes(), 2 * texts.size() + 1);
}

// A token of 100,000 'a' then 'b', and one 'a': a text of 100,000 'a' walked 100,000 bytes
// deep from each position (46 to 63 s for t5 and rwkv).
const std::string long_ab = std::string(100000, 'a') + "b";

TEST(KeyTrie, RwkvOnAHundredThousandBytesUnderALongerTokenIsLinear) {
  auto v = std::make_unique<tk::Vocab::Impl>();
  v->type = tk::Kind::rwkv;
  v->special_unk_id = -1;
  v->id_to_token = {{long_ab, 0, tk::attr_normal}, {"a", 0, tk::attr_normal}, {"aa", 0, tk::attr_normal}};
  Ids out;
  tk::make_rwkv(*v)->tokenize(std::string(100001, 'a'), out);
  Ids want(50000, 2);
  want.push_back(1);
  EXPECT_EQ(out, want);
  out.clear();
  tk::make_rwkv(*v)->tokenize("b" + long_ab + "a", out);  // the long token itself, found by its hash
  EXPECT_EQ(out, (Ids{-1, 0, 1}));
}

TEST(KeyTrie, UnigramOnAHundredThousandBytesUnderALongerTokenIsLinear) {
  auto v = std::make_unique<tk::Vocab::Impl>();
  v->type = tk::Kind::ugm;
  v->special_unk_id = 2;
  v->id_to_token = {{long_ab, -1.0f, tk::attr_normal}, {"a", -1.0f, tk::attr_normal}, {"<unk>", 0, tk::attr_unknown}};
  Ids out;
  tk::make_ugm(*v)->tokenize(std::string(100000, 'a'), out);
  EXPECT_EQ(out, Ids(100000, 1));
  out.clear();
  tk::make_ugm(*v)->tokenize(long_ab, out);  // one token scores above 100,001
  EXPECT_EQ(out, (Ids{0}));
}

TEST(KeyTrie, WordPieceOnAHundredThousandBytesUnderALongerTokenIsLinear) {
  auto v = std::make_unique<tk::Vocab::Impl>();
  v->type = tk::Kind::wpm;
  v->special_unk_id = 3;
  v->bert_lowercase = v->bert_strip_accents = false;
  const std::vector<std::string> texts = {"\xe2\x96\x81" + long_ab, "\xe2\x96\x81" "a", "a", "[UNK]"};
  auto index = std::make_shared<tk::TokenIndex>();
  for (const std::string& t : texts) {
    index->add(t);
    v->id_to_token.push_back({t, 0, tk::attr_normal});
  }
  index->build();
  v->token_to_id = index;
  Ids out;
  tk::make_wpm(*v)->tokenize(std::string(100000, 'a'), out);
  Ids want(100000, 2);
  want[0] = 1;
  EXPECT_EQ(out, want);
  out.clear();
  tk::make_wpm(*v)->tokenize(long_ab + " a", out);
  EXPECT_EQ(out, (Ids{0, 1}));
}

// --- pieces ------------------------------------------------------------------------------

// A GPT-2 vocabulary whose token 0 is n times U+4E2D (outside the byte map): its piece is n
// times "[UNK_BYTE_0xe4b8ad" + the whole text + "]", as llama.cpp writes it.
tk::Vocab gpt2_of(const std::string& first) {
  static std::vector<std::string> keep;
  keep = {first, "a", "b"};
  tk::VocabSpec spec;
  auto str = [](std::string_view s) {
    tk::KeyValue kv;
    kv.type = tk::ValueType::string;
    kv.str = s;
    return kv;
  };
  spec.keys["tokenizer.ggml.model"] = str("gpt2");
  spec.keys["tokenizer.ggml.pre"] = str("gpt-2");
  tk::KeyValue tokens;
  tokens.type = tk::ValueType::array, tokens.elem = tk::ValueType::string;
  for (const std::string& t : keep) tokens.strings.push_back(t);
  tokens.count = tokens.strings.size();
  spec.keys["tokenizer.ggml.tokens"] = tokens;
  tk::KeyValue merges;
  merges.type = tk::ValueType::array, merges.elem = tk::ValueType::string;
  spec.keys["tokenizer.ggml.merges"] = merges;
  tk::KeyValue bos;
  bos.type = tk::ValueType::u32, bos.bits = 0;
  spec.keys["tokenizer.ggml.bos_token_id"] = bos;
  spec.keys["tokenizer.ggml.eos_token_id"] = bos;
  tk::KeyValue add;
  add.type = tk::ValueType::boolean, add.bits = 1;
  spec.keys["tokenizer.ggml.add_bos_token"] = add;
  return tk::Vocab::load(spec);
}

std::string han(size_t n) {
  std::string s;
  for (size_t i = 0; i < n; ++i) s += "\xe4\xb8\xad";
  return s;
}

TEST(Piece, APieceCutAtALimitIsThatMuchOfTheWholePiece) {
  const tk::Vocab v = gpt2_of(han(50));
  const std::string whole = v.piece(0);
  ASSERT_EQ(whole.size(), 50u * (18 + 150 + 1));
  EXPECT_EQ(whole.substr(0, 169), "[UNK_BYTE_0xe4b8ad" + han(50) + "]");
  for (size_t limit : {size_t{0}, size_t{1}, size_t{18}, size_t{169}, size_t{170}, whole.size() - 1, whole.size(), whole.size() + 5})
    EXPECT_EQ(v.piece(0, true, limit), whole.substr(0, limit)) << limit;
  EXPECT_EQ(v.piece(1, true, 0), "");
  EXPECT_EQ(v.piece(1, true, 1), "a");
}

TEST(Piece, AListOfTokensShowsA64KiBPieceAndSaysTheRestWasCut) {
  // A BOS of 30,000 Han characters: its whole piece is 2.7 GB; tokenize's list and a prompt's
  // tokens made it whole (the audit's finding 6). They show 65,536 bytes of it, marked cut.
  const tk::Vocab v = gpt2_of(han(30000));
  bool cut = false;
  const std::string p = v.shown_piece(0, cut);
  EXPECT_TRUE(cut);
  EXPECT_EQ(p, v.piece(0, true, 65536));
  EXPECT_EQ(p.substr(0, 18), "[UNK_BYTE_0xe4b8ad");
  EXPECT_EQ(v.shown_piece(1, cut), "a");
  EXPECT_FALSE(cut);
  const std::vector<ggufkit::ChatToken> tokens = ggufkit::chat_tokens(v, "ab");
  ASSERT_EQ(tokens.size(), 3u);  // the BOS the vocabulary adds, then "a" and "b"
  EXPECT_EQ(tokens[0].id, 0);
  EXPECT_EQ(tokens[0].piece, p);
  EXPECT_TRUE(tokens[0].cut);
  EXPECT_EQ(tokens[1].piece, "a");
  EXPECT_FALSE(tokens[1].cut);
}

TEST(Piece, DetokenizeMakesNoMoreThanItsLimitAndNamesTheIdThatPassesIt) {
  const tk::Vocab v = gpt2_of(han(30000));
  EXPECT_EQ(v.detokenize(std::vector<int32_t>{1, 2, 1}, false, true, 3), "aba");
  auto refusal = [&](std::vector<int32_t> ids, size_t limit) {
    try {
      v.detokenize(ids, false, true, limit);
    } catch (const tk::Error& e) {
      EXPECT_EQ(e.key, "tokenizer.ggml.tokens");
      return std::string(e.what());
    }
    return std::string("no refusal");
  };
  EXPECT_EQ(refusal({1, 2, 1}, 2), "the text would be more than 2 bytes: id 1 (number 3 of the ids) takes it past that");
  // The BOS's piece is 2.7 GB: at most the limit of it is made.
  EXPECT_EQ(refusal({1, 0}, 1u << 20), "the text would be more than 1048576 bytes: id 0 (number 2 of the ids) takes it past that");
}

TEST(Piece, TheChatPathComparesABosOfThirtyThousandHanCharactersOnlyAsFarAsThePrompt) {
  // Its piece is 2.7 GB (225 s and 5.6 GB to validate such a file); the prompt is not that long.
  const tk::Vocab v = gpt2_of(han(30000));
  EXPECT_EQ(v.piece(0, true, 100), "[UNK_BYTE_0xe4b8ad" + han(30000).substr(0, 82));
  EXPECT_EQ(ggufkit::chat_text(v, han(30000) + "ab"), han(30000) + "ab");  // the prompt is not the piece: nothing stripped
}

}  // namespace
