// einsum by contraction with matmul. The equation names each operand's dims with letters
// ("bij,bjk->bik"); "..." stands for the dims not named (broadcast, right-aligned); without
// "->" the output is the "..." dims then the letters used once, alphabetically (NumPy's rule).
// Operands are folded left to right; for each pair (A, B):
//   1. letters that neither the other operand, the later operands nor the output use are
//      summed away;
//   2. the rest fall in three groups: batch (in A and B, kept), contracted (in A and B, not
//      kept), free (in one of them only);
//   3. A is permuted to [batch, free_A, contracted] and B to [batch, contracted, free_B],
//      each reshaped to 3-D, and one batched matmul gives [batch, free_A, free_B].
// The last result is summed over letters the output lacks and permuted to the output's order.
// A letter repeated inside one operand (a diagonal, "ii->i") is not supported.
#include <algorithm>
#include <map>
#include <string>

#include "ops/ops.h"
#include "ops/record.h"

namespace rg {

namespace {

using Labels = std::vector<int64_t>;  // one per dim: 0-51 letters, 52+ the "..." dims
constexpr int64_t kFirstEllipsisLabel = 52;

struct Term {
  Tensor t;
  Labels labels;
};

int64_t letter_label(char c, const std::string& eq) {
  if (c >= 'a' && c <= 'z') return c - 'a';
  if (c >= 'A' && c <= 'Z') return 26 + (c - 'A');
  RG_CHECK(false, "einsum: invalid character '", c, "' in equation '", eq, "'");
  return -1;
}

// The labels of one subscript; "..." covers `ellipsis_dims` dims ending at the last label.
Labels parse_subscript(const std::string& s, int64_t ellipsis_dims, int64_t max_ellipsis,
                       const std::string& eq) {
  Labels out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s.compare(i, 3, "...") == 0) {
      for (int64_t k = max_ellipsis - ellipsis_dims; k < max_ellipsis; ++k)
        out.push_back(kFirstEllipsisLabel + k);
      i += 2;
    } else {
      out.push_back(letter_label(s[i], eq));
    }
  }
  return out;
}

int64_t letters_in(const std::string& s) {
  const size_t dots = s.find("...");
  return static_cast<int64_t>(s.size()) - (dots == std::string::npos ? 0 : 3);
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> parts(1);
  for (char c : s) {
    if (c == sep)
      parts.emplace_back();
    else
      parts.back().push_back(c);
  }
  return parts;
}

bool contains(const Labels& labels, int64_t label) {
  return std::find(labels.begin(), labels.end(), label) != labels.end();
}

// Sums away the dims whose labels `keep` lacks.
Term sum_unused(Term term, const Labels& keep) {
  std::vector<int64_t> dims;
  Labels left;
  for (size_t d = 0; d < term.labels.size(); ++d) {
    if (contains(keep, term.labels[d]))
      left.push_back(term.labels[d]);
    else
      dims.push_back(static_cast<int64_t>(d));
  }
  if (dims.empty()) return term;
  return {sum(term.t, dims), left};
}

int64_t size_of(const Term& term, int64_t label) {
  auto it = std::find(term.labels.begin(), term.labels.end(), label);
  return it == term.labels.end() ? -1 : term.t.size(it - term.labels.begin());
}

// term's dims permuted to `order` (labels it has), each expanded to `sizes`, and merged
// into the groups given by `group_ends` (exclusive ends in `order`).
Tensor arrange(const Term& term, const Labels& order, const Shape& sizes,
               const std::vector<size_t>& group_ends) {
  std::vector<int64_t> perm;
  for (int64_t label : order)
    perm.push_back(std::find(term.labels.begin(), term.labels.end(), label) - term.labels.begin());
  Tensor t = expand(permute(term.t, perm), sizes);
  Shape merged;
  size_t start = 0;
  for (size_t end : group_ends) {
    merged.push_back(numel_of(Shape(sizes.begin() + start, sizes.begin() + end)));
    start = end;
  }
  return reshape(t, merged);
}

Term contract(Term a, Term b, const Labels& keep) {
  Labels keep_a = keep, keep_b = keep;
  keep_a.insert(keep_a.end(), b.labels.begin(), b.labels.end());
  keep_b.insert(keep_b.end(), a.labels.begin(), a.labels.end());
  a = sum_unused(a, keep_a);
  b = sum_unused(b, keep_b);
  Labels batch, contracted, free_a, free_b;
  for (int64_t l : a.labels)
    (contains(b.labels, l) ? (contains(keep, l) ? batch : contracted) : free_a).push_back(l);
  for (int64_t l : b.labels)
    if (!contains(a.labels, l)) free_b.push_back(l);
  auto sizes = [&](const Labels& ls) {
    Shape s;
    for (int64_t l : ls) {  // -1: absent; a size of 1 broadcasts against the other
      const int64_t in_a = size_of(a, l), in_b = size_of(b, l);
      s.push_back(in_a == -1 || in_a == 1 ? (in_b == -1 ? in_a : in_b) : in_a);
    }
    return s;
  };
  Shape sb = sizes(batch), sfa = sizes(free_a), sk = sizes(contracted), sfb = sizes(free_b);
  auto concat = [](std::initializer_list<const std::vector<int64_t>*> parts) {
    std::vector<int64_t> out;
    for (auto* p : parts) out.insert(out.end(), p->begin(), p->end());
    return out;
  };
  Labels order_a = concat({&batch, &free_a, &contracted}),
         order_b = concat({&batch, &contracted, &free_b});
  Tensor ma = arrange(a, order_a, concat({&sb, &sfa, &sk}),
                      {batch.size(), batch.size() + free_a.size(), order_a.size()});
  Tensor mb = arrange(b, order_b, concat({&sb, &sk, &sfb}),
                      {batch.size(), batch.size() + contracted.size(), order_b.size()});
  Tensor product = reshape(matmul(ma, mb), concat({&sb, &sfa, &sfb}));
  return {product, concat({&batch, &free_a, &free_b})};
}

}  // namespace
namespace {

char label_char(int64_t label) {
  return static_cast<char>(label < 26 ? 'a' + label : 'A' + (label - 26));
}

// Each operand's labels, checked against its dims; a letter repeated in one operand throws.
std::vector<Term> parse_operands(const std::vector<std::string>& subscripts,
                                 const std::vector<Tensor>& operands, int64_t& max_ellipsis,
                                 const std::string& eq) {
  max_ellipsis = 0;
  for (size_t i = 0; i < operands.size(); ++i) {
    check_defined("einsum", operands[i], "operand");
    check_same_device("einsum", operands[0], operands[i]);
    RG_CHECK(operands[i].dtype() == operands[0].dtype() && is_floating(operands[i].dtype()),
             "einsum: expected floating-point operands of one dtype, got ", operands[0].dtype(),
             " and ", operands[i].dtype());
    const std::string& s = subscripts[i];
    const bool has_dots = s.find("...") != std::string::npos;
    RG_CHECK(!has_dots || s.find("...", s.find("...") + 3) == std::string::npos,
             "einsum: more than one '...' in '", s, "'");
    const int64_t rest = operands[i].dim() - letters_in(s);
    RG_CHECK(rest == 0 || (has_dots && rest > 0), "einsum: subscript '", s, "' of operand ", i,
             " does not match its ", operands[i].dim(), " dims (shape ",
             shape_str(operands[i].shape()), ")");
    max_ellipsis = std::max(max_ellipsis, rest);
  }
  std::vector<Term> terms;
  for (size_t i = 0; i < operands.size(); ++i) {
    const int64_t rest = operands[i].dim() - letters_in(subscripts[i]);
    Labels labels = parse_subscript(subscripts[i], rest, max_ellipsis, eq);
    for (size_t d = 0; d < labels.size(); ++d)
      RG_CHECK(std::count(labels.begin(), labels.end(), labels[d]) == 1, "einsum: subscript '",
               label_char(labels[d]), "' repeated in operand ", i, " ('", subscripts[i],
               "'): diagonals are not supported");
    terms.push_back({operands[i], labels});
  }
  return terms;
}

// The output's labels: explicit after "->", else "..." then the letters used once, sorted.
Labels output_labels(const std::string& eq, const std::vector<Term>& terms, int64_t max_ellipsis) {
  const size_t arrow = eq.find("->");
  std::map<int64_t, int> uses;
  for (const Term& term : terms)
    for (int64_t l : term.labels) ++uses[l];
  if (arrow != std::string::npos) {
    const std::string out = eq.substr(arrow + 2);
    Labels labels = parse_subscript(out, max_ellipsis, max_ellipsis, eq);
    for (int64_t l : labels) {
      RG_CHECK(uses.count(l) || l >= kFirstEllipsisLabel, "einsum: output subscript '",
               label_char(l), "' appears in no operand of '", eq, "'");
      RG_CHECK(std::count(labels.begin(), labels.end(), l) == 1, "einsum: output subscript '",
               label_char(l), "' repeated in '", eq, "'");
    }
    return labels;
  }
  Labels labels;
  for (int64_t k = 0; k < max_ellipsis; ++k) labels.push_back(kFirstEllipsisLabel + k);
  for (auto [l, n] : uses)
    if (n == 1 && l < kFirstEllipsisLabel) labels.push_back(l);
  return labels;
}

// Checks that each label has one size across operands (or 1, broadcast).
void check_sizes(const std::vector<Term>& terms, const std::string& eq) {
  std::map<int64_t, int64_t> size;
  for (const Term& term : terms)
    for (size_t d = 0; d < term.labels.size(); ++d) {
      const int64_t n = term.t.size(static_cast<int64_t>(d));
      auto [it, fresh] = size.emplace(term.labels[d], n);
      if (!fresh && it->second == 1) it->second = n;
      RG_CHECK(fresh || n == 1 || it->second == n, "einsum: subscript '",
               term.labels[d] >= kFirstEllipsisLabel ? '.' : label_char(term.labels[d]),
               "' has sizes ", it->second, " and ", n, " in '", eq, "'");
    }
}

}  // namespace

Tensor einsum(const std::string& equation, const std::vector<Tensor>& operands) {
  std::string eq;
  for (char c : equation)
    if (c != ' ') eq.push_back(c);
  const size_t arrow = eq.find("->");
  const std::vector<std::string> subscripts = split(eq.substr(0, arrow), ',');
  RG_CHECK(!operands.empty(), "einsum: expected at least one operand for '", equation, "'");
  RG_CHECK(subscripts.size() == operands.size(), "einsum: '", equation, "' names ",
           subscripts.size(), " operands, got ", operands.size());
  int64_t max_ellipsis = 0;
  std::vector<Term> terms = parse_operands(subscripts, operands, max_ellipsis, equation);
  check_sizes(terms, equation);
  const Labels out = output_labels(eq, terms, max_ellipsis);
  // Fold left to right; `keep` = the labels of the later operands and of the output.
  Term acc = terms[0];
  for (size_t i = 1; i <= terms.size(); ++i) {
    Labels keep = out;
    for (size_t j = i + 1; j < terms.size(); ++j)
      keep.insert(keep.end(), terms[j].labels.begin(), terms[j].labels.end());
    if (i == terms.size()) {
      acc = sum_unused(acc, keep);
    } else {
      acc = contract(acc, terms[i], keep);
    }
  }
  std::vector<int64_t> perm;
  for (int64_t l : out) {
    auto it = std::find(acc.labels.begin(), acc.labels.end(), l);
    if (it != acc.labels.end()) perm.push_back(it - acc.labels.begin());
  }
  RG_CHECK(perm.size() == out.size(), "einsum: internal error, output labels lost");
  return permute(acc.t, perm);
}

}  // namespace rg
