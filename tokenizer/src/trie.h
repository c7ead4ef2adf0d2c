#pragma once
// A byte trie over token texts, as llama.cpp's naive_trie walks them (one byte per step),
// without its recursion: nodes are numbers, edges one hash map keyed by (node, byte). Its
// size is the total of the keys' bytes, which the vocabulary's own size bounds.
#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace ggufkit::tokenizer {

class ByteTrie {
 public:
  static constexpr int32_t root = 0, none = -1;

  // A key inserted twice keeps the last value, as naive_trie::insert does.
  void insert(std::string_view key, int32_t value = 0) {
    int32_t node = root;
    for (char ch : key) {
      auto [it, added] = edges_.try_emplace(edge(node, ch), static_cast<int32_t>(nodes_.size()));
      if (added) nodes_.push_back({});
      node = it->second;
    }
    nodes_[static_cast<size_t>(node)] = {true, value};
  }
  int32_t child(int32_t node, char ch) const {
    auto it = edges_.find(edge(node, ch));
    return it == edges_.end() ? none : it->second;
  }
  bool has_value(int32_t node) const { return nodes_[static_cast<size_t>(node)].has_value; }
  int32_t value(int32_t node) const { return nodes_[static_cast<size_t>(node)].value; }

 private:
  struct Node {
    bool has_value = false;
    int32_t value = 0;
  };
  static uint64_t edge(int32_t node, char ch) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(node)) << 8) | static_cast<uint8_t>(ch);
  }
  std::unordered_map<uint64_t, int32_t> edges_;
  std::vector<Node> nodes_ = std::vector<Node>(1);  // the root is node 0
};

}  // namespace ggufkit::tokenizer
