// Label selectors as kubectl writes them, turned into the `node_selector` of POST /v1/jobs:
// an array of {"key": K, "operator": "In"|"NotIn"|"Exists"|"DoesNotExist", "values": [...]}.
//
//   k=v, k==v        In [v]            k in (a, b)      In [a, b]
//   k!=v             NotIn [v]         k notin (a, b)   NotIn [a, b]
//   k                Exists            !k               DoesNotExist
//
// One text may hold several requirements separated by commas (commas inside parentheses belong
// to the set), as in `kubectl -l 'gpu=h100,zone in (a,b)'`. Keys are [PREFIX/]NAME with NAME of
// 1..63 letters, digits, '-', '_' or '.', beginning and ending with a letter or digit (PREFIX: a
// DNS subdomain, up to 253 characters); values are empty or the same shape as NAME. Pure; errors
// are kInvalidArgument and say what is wrong where.
#pragma once

#include <string>
#include <vector>

#include "cli/client.h"

namespace gpupool::cli {

// The requirements of one selector text, in the order written.
Result<Json> ParseSelector(const std::string& text);

// The requirements of several texts (repeated --selector flags), concatenated.
Result<Json> ParseSelectors(const std::vector<std::string>& texts);

// "--topology LEVEL[:preferred]": {"level": LEVEL, "required": true|false}, with LEVEL one of
// node, nvlink-domain, block.
Result<Json> ParseTopology(const std::string& text);

}  // namespace gpupool::cli
