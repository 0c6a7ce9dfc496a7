// The reference GPT's forward and loss (see gpt_reference.h for shapes and conventions):
// straight loops in f64, each sum in index order.
#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>

#include "gpt_reference.h"

namespace rg::exactness {

RefParams zero_params(const RefConfig& c) {
  const int64_t C = c.embd;
  RefParams p;
  p.wte.assign(c.vocab * C, 0.0);
  p.wpe.assign(c.block * C, 0.0);
  p.lnf_w.assign(C, 0.0);
  p.lnf_b.assign(C, 0.0);
  p.layers.resize(c.layers);
  for (RefLayer& l : p.layers) {
    l.ln1_w.assign(C, 0.0);
    l.ln1_b.assign(C, 0.0);
    l.attn_w.assign(3 * C * C, 0.0);
    l.attn_b.assign(3 * C, 0.0);
    l.attn_proj_w.assign(C * C, 0.0);
    l.attn_proj_b.assign(C, 0.0);
    l.ln2_w.assign(C, 0.0);
    l.ln2_b.assign(C, 0.0);
    l.fc_w.assign(4 * C * C, 0.0);
    l.fc_b.assign(4 * C, 0.0);
    l.mlp_proj_w.assign(4 * C * C, 0.0);
    l.mlp_proj_b.assign(C, 0.0);
  }
  return p;
}

std::vector<std::pair<std::string, Vec*>> named(RefParams& p) {
  std::vector<std::pair<std::string, Vec*>> out = {{"transformer.wte.weight", &p.wte},
                                                   {"transformer.wpe.weight", &p.wpe}};
  for (size_t i = 0; i < p.layers.size(); ++i) {
    const std::string h = "transformer.h." + std::to_string(i) + ".";
    RefLayer& l = p.layers[i];
    const std::vector<std::pair<std::string, Vec*>> block = {
        {h + "ln_1.weight", &l.ln1_w},
        {h + "ln_1.bias", &l.ln1_b},
        {h + "attn.c_attn.weight", &l.attn_w},
        {h + "attn.c_attn.bias", &l.attn_b},
        {h + "attn.c_proj.weight", &l.attn_proj_w},
        {h + "attn.c_proj.bias", &l.attn_proj_b},
        {h + "ln_2.weight", &l.ln2_w},
        {h + "ln_2.bias", &l.ln2_b},
        {h + "mlp.c_fc.weight", &l.fc_w},
        {h + "mlp.c_fc.bias", &l.fc_b},
        {h + "mlp.c_proj.weight", &l.mlp_proj_w},
        {h + "mlp.c_proj.bias", &l.mlp_proj_b}};
    out.insert(out.end(), block.begin(), block.end());
  }
  out.push_back({"transformer.ln_f.weight", &p.lnf_w});
  out.push_back({"transformer.ln_f.bias", &p.lnf_b});
  return out;
}

Vec linear_forward(const Vec& x, const Vec& w, const Vec& bias, int64_t n, int64_t in,
                   int64_t out) {
  Vec y(n * out);
  for (int64_t r = 0; r < n; ++r)
    for (int64_t o = 0; o < out; ++o) {
      double acc = bias.empty() ? 0.0 : bias[o];
      for (int64_t i = 0; i < in; ++i) acc += x[r * in + i] * w[o * in + i];
      y[r * out + o] = acc;
    }
  return y;
}

double gelu(double x) { return 0.5 * x * (1.0 + std::erf(x / std::numbers::sqrt2)); }

// d/dx x Phi(x) = Phi(x) + x phi(x)
double gelu_grad(double x) {
  const double cdf = 0.5 * (1.0 + std::erf(x / std::numbers::sqrt2));
  const double pdf = std::exp(-0.5 * x * x) / std::sqrt(2.0 * std::numbers::pi);
  return cdf + x * pdf;
}

namespace {

Vec layer_norm(const Vec& x, const Vec& w, const Vec& b, int64_t n, int64_t C, RefLayerNorm* keep) {
  Vec y(n * C);
  keep->xhat.assign(n * C, 0.0);
  keep->rstd.assign(n, 0.0);
  for (int64_t r = 0; r < n; ++r) {
    const double* row = &x[r * C];
    double mean = 0, var = 0;
    for (int64_t i = 0; i < C; ++i) mean += row[i];
    mean /= static_cast<double>(C);
    for (int64_t i = 0; i < C; ++i) var += (row[i] - mean) * (row[i] - mean);
    var /= static_cast<double>(C);
    const double rstd = 1.0 / std::sqrt(var + 1e-5);
    keep->rstd[r] = rstd;
    for (int64_t i = 0; i < C; ++i) {
      const double xhat = (row[i] - mean) * rstd;
      keep->xhat[r * C + i] = xhat;
      y[r * C + i] = xhat * w[i] + b[i];
    }
  }
  return y;
}

// One head's causal attention of batch row b: fills probs [T, T] (zero above the diagonal)
// and the head's columns of y [N, C].
void attention_head(const RefConfig& c, const Vec& qkv, int64_t b, int64_t h, double* probs,
                    Vec* y) {
  const int64_t T = c.seq, C = c.embd, D = C / c.heads;
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  auto at = [&](int64_t t, int64_t part, int64_t d) {
    return qkv[(b * T + t) * 3 * C + part * C + h * D + d];
  };
  for (int64_t t = 0; t < T; ++t) {
    double* p = probs + t * T;
    double top = -INFINITY;
    for (int64_t s = 0; s <= t; ++s) {
      double dot = 0;
      for (int64_t d = 0; d < D; ++d) dot += at(t, 0, d) * at(s, 1, d);
      p[s] = dot * scale;
      top = std::max(top, p[s]);
    }
    double total = 0;
    for (int64_t s = 0; s <= t; ++s) total += (p[s] = std::exp(p[s] - top));
    for (int64_t s = 0; s <= t; ++s) p[s] /= total;
    for (int64_t s = t + 1; s < T; ++s) p[s] = 0.0;
    for (int64_t d = 0; d < D; ++d) {
      double acc = 0;
      for (int64_t s = 0; s <= t; ++s) acc += p[s] * at(s, 2, d);
      (*y)[(b * T + t) * C + h * D + d] = acc;
    }
  }
}

// One block, its activations kept in `k`; returns its output.
Vec block_forward(const RefConfig& c, const RefLayer& l, const Vec& x, RefLayerCache* k) {
  const int64_t N = c.batch * c.seq, C = c.embd, T = c.seq, H = c.heads;
  k->x = x;
  k->ln1_out = layer_norm(x, l.ln1_w, l.ln1_b, N, C, &k->ln1);
  k->qkv = linear_forward(k->ln1_out, l.attn_w, l.attn_b, N, C, 3 * C);
  k->probs.assign(c.batch * H * T * T, 0.0);
  k->att_y.assign(N * C, 0.0);
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t h = 0; h < H; ++h)
      attention_head(c, k->qkv, b, h, &k->probs[(b * H + h) * T * T], &k->att_y);
  const Vec att_out = linear_forward(k->att_y, l.attn_proj_w, l.attn_proj_b, N, C, C);
  k->h1.resize(N * C);
  for (int64_t i = 0; i < N * C; ++i) k->h1[i] = x[i] + att_out[i];
  k->ln2_out = layer_norm(k->h1, l.ln2_w, l.ln2_b, N, C, &k->ln2);
  k->fc_pre = linear_forward(k->ln2_out, l.fc_w, l.fc_b, N, C, 4 * C);
  k->gelu_out.resize(N * 4 * C);
  for (int64_t i = 0; i < N * 4 * C; ++i) k->gelu_out[i] = gelu(k->fc_pre[i]);
  const Vec mlp_out = linear_forward(k->gelu_out, l.mlp_proj_w, l.mlp_proj_b, N, 4 * C, C);
  Vec out(N * C);
  for (int64_t i = 0; i < N * C; ++i) out[i] = k->h1[i] + mlp_out[i];
  return out;
}

// Softmax of each row of the logits (kept in f->probs) and the mean cross-entropy.
void softmax_loss(const RefConfig& c, const Vec& logits, const std::vector<int64_t>& targets,
                  RefForward* f) {
  const int64_t N = c.batch * c.seq, V = c.vocab;
  f->probs.assign(N * V, 0.0);
  double loss = 0;
  for (int64_t r = 0; r < N; ++r) {
    const double* z = &logits[r * V];
    double top = -INFINITY, total = 0;
    for (int64_t v = 0; v < V; ++v) top = std::max(top, z[v]);
    for (int64_t v = 0; v < V; ++v) total += std::exp(z[v] - top);
    for (int64_t v = 0; v < V; ++v) f->probs[r * V + v] = std::exp(z[v] - top) / total;
    loss += std::log(total) + top - z[targets[r]];  // -log softmax(z)[target]
  }
  f->loss = loss / static_cast<double>(N);
}

}  // namespace

RefForward reference_forward(const RefConfig& c, const RefParams& p,
                             const std::vector<int64_t>& idx, const std::vector<int64_t>& targets) {
  const int64_t N = c.batch * c.seq, C = c.embd;
  RefForward f;
  Vec x(N * C);
  for (int64_t r = 0; r < N; ++r)
    for (int64_t i = 0; i < C; ++i)
      x[r * C + i] = p.wte[idx[r] * C + i] + p.wpe[(r % c.seq) * C + i];
  f.layers.resize(c.layers);
  for (int64_t i = 0; i < c.layers; ++i) x = block_forward(c, p.layers[i], x, &f.layers[i]);
  f.x_final = x;
  f.lnf_out = layer_norm(x, p.lnf_w, p.lnf_b, N, C, &f.lnf);
  const Vec logits = linear_forward(f.lnf_out, p.wte, {}, N, C, c.vocab);  // tied lm_head
  softmax_loss(c, logits, targets, &f);
  return f;
}

}  // namespace rg::exactness
