#pragma once
// The key rules (key_rules.cpp), for the validator: each standard key against the type and
// the values the key registry (schemas/keys.yaml) says llama.cpp reads it with (key_type,
// key_type_unusual, key_range, key_value_unusual), general.file_type against the tensors'
// types (file_type_mismatch), and the names a publisher gets wrong: general.name
// (name_is_hash, name_is_path) and, given the file's name, the name against the metadata
// (file_name_mismatch). Findings under the key they are about, without offsets.
#include <string>
#include <vector>

#include "ggufkit/check.h"
#include "ggufkit/role.h"

namespace ggufkit {
// `file`: the file's path, or null for a model not read from a file of its own (an edit's
// result, a set judged as one model, a header on standard input). `role`: the file's, as
// the validator found it once (an adapter when it was given a base, whatever it says).
std::vector<Finding> key_rules(const Model& m, const std::string* file, Role role);
}  // namespace ggufkit
