// The reference GPT's backward (see gpt_reference.h for shapes and conventions): the
// gradients derived by hand, layer by layer in reverse, with straight loops in f64.
//   Linear y = x W^T + b:   dx = dy W, dW += dy^T x, db += sum over rows of dy
//   LayerNorm y = xhat w + b, xhat = (x - mean) rstd:
//     dw += sum dy xhat, db += sum dy,
//     dx = rstd (g - mean(g) - xhat mean(g xhat)) with g = dy w
//   softmax + mean cross-entropy: dlogits = (p - onehot(target)) / N
//   attention, per head, P = softmax(S), S = scale q k^T (causal), y = P v:
//     dP = dy v^T, dv += P^T dy, dS = P (dP - rowsum(P dP)), dq = scale dS k, dk = scale dS^T q
#include <cmath>

#include "gpt_reference.h"

namespace rg::exactness {
namespace {

// Linear backward: accumulates dw [out, in] and db [out]; returns dx [n, in].
Vec linear_backward(const Vec& dy, const Vec& x, const Vec& w, int64_t n, int64_t in, int64_t out,
                    Vec* dw, Vec* db) {
  Vec dx(n * in, 0.0);
  for (int64_t r = 0; r < n; ++r)
    for (int64_t o = 0; o < out; ++o) {
      const double g = dy[r * out + o];
      if (db != nullptr) (*db)[o] += g;
      for (int64_t i = 0; i < in; ++i) {
        (*dw)[o * in + i] += g * x[r * in + i];
        dx[r * in + i] += g * w[o * in + i];
      }
    }
  return dx;
}

// LayerNorm backward: accumulates dw and db; adds the input's gradient to *dx.
void layer_norm_backward(const Vec& dy, const RefLayerNorm& keep, const Vec& w, int64_t n,
                         int64_t C, Vec* dw, Vec* db, Vec* dx) {
  Vec g(C);
  for (int64_t r = 0; r < n; ++r) {
    double mean_g = 0, mean_gx = 0;
    for (int64_t i = 0; i < C; ++i) {
      const double d = dy[r * C + i], xhat = keep.xhat[r * C + i];
      (*dw)[i] += d * xhat;
      (*db)[i] += d;
      g[i] = d * w[i];
      mean_g += g[i];
      mean_gx += g[i] * xhat;
    }
    mean_g /= static_cast<double>(C);
    mean_gx /= static_cast<double>(C);
    for (int64_t i = 0; i < C; ++i)
      (*dx)[r * C + i] += keep.rstd[r] * (g[i] - mean_g - keep.xhat[r * C + i] * mean_gx);
  }
}

// One head's attention backward for batch row b: dy is the merged heads' gradient [N, C],
// probs this head's [T, T]; adds to the head's q, k and v columns of dqkv [N, 3C].
void attention_head_backward(const RefConfig& c, const Vec& qkv, const double* probs, const Vec& dy,
                             int64_t b, int64_t h, Vec* dqkv) {
  const int64_t T = c.seq, C = c.embd, D = C / c.heads;
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  auto col = [&](int64_t t, int64_t part, int64_t d) {
    return (b * T + t) * 3 * C + part * C + h * D + d;
  };
  Vec dp(T);
  for (int64_t t = 0; t < T; ++t) {
    const double* p = probs + t * T;
    const double* g = &dy[(b * T + t) * C + h * D];
    double rowsum = 0;
    for (int64_t s = 0; s <= t; ++s) {
      double dot = 0;
      for (int64_t d = 0; d < D; ++d) {
        dot += g[d] * qkv[col(s, 2, d)];
        (*dqkv)[col(s, 2, d)] += p[s] * g[d];  // dv
      }
      dp[s] = dot;
      rowsum += p[s] * dot;
    }
    for (int64_t s = 0; s <= t; ++s) {
      const double ds = p[s] * (dp[s] - rowsum) * scale;
      for (int64_t d = 0; d < D; ++d) {
        (*dqkv)[col(t, 0, d)] += ds * qkv[col(s, 1, d)];  // dq
        (*dqkv)[col(s, 1, d)] += ds * qkv[col(t, 0, d)];  // dk
      }
    }
  }
}

// One block's backward: dout is the gradient of its output; returns that of its input.
Vec block_backward(const RefConfig& c, const RefLayer& l, const RefLayerCache& k, const Vec& dout,
                   RefLayer* g) {
  const int64_t N = c.batch * c.seq, C = c.embd, T = c.seq, H = c.heads;
  // x' = h1 + c_proj(gelu(c_fc(ln_2(h1))))
  Vec dgelu =
      linear_backward(dout, k.gelu_out, l.mlp_proj_w, N, 4 * C, C, &g->mlp_proj_w, &g->mlp_proj_b);
  for (int64_t i = 0; i < N * 4 * C; ++i) dgelu[i] *= gelu_grad(k.fc_pre[i]);
  const Vec dln2 = linear_backward(dgelu, k.ln2_out, l.fc_w, N, C, 4 * C, &g->fc_w, &g->fc_b);
  Vec dh1 = dout;
  layer_norm_backward(dln2, k.ln2, l.ln2_w, N, C, &g->ln2_w, &g->ln2_b, &dh1);
  // h1 = x + c_proj(attn(c_attn(ln_1(x))))
  const Vec daty =
      linear_backward(dh1, k.att_y, l.attn_proj_w, N, C, C, &g->attn_proj_w, &g->attn_proj_b);
  Vec dqkv(N * 3 * C, 0.0);
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t h = 0; h < H; ++h)
      attention_head_backward(c, k.qkv, &k.probs[(b * H + h) * T * T], daty, b, h, &dqkv);
  const Vec dln1 = linear_backward(dqkv, k.ln1_out, l.attn_w, N, C, 3 * C, &g->attn_w, &g->attn_b);
  Vec dx = dh1;
  layer_norm_backward(dln1, k.ln1, l.ln1_w, N, C, &g->ln1_w, &g->ln1_b, &dx);
  return dx;
}

}  // namespace

RefParams reference_backward(const RefConfig& c, const RefParams& p, const RefForward& f,
                             const std::vector<int64_t>& idx, const std::vector<int64_t>& targets) {
  const int64_t N = c.batch * c.seq, C = c.embd, V = c.vocab;
  RefParams g = zero_params(c);
  Vec dlogits = f.probs;
  for (int64_t r = 0; r < N; ++r) {
    dlogits[r * V + targets[r]] -= 1.0;
    for (int64_t v = 0; v < V; ++v) dlogits[r * V + v] /= static_cast<double>(N);
  }
  const Vec dlnf = linear_backward(dlogits, f.lnf_out, p.wte, N, C, V, &g.wte, nullptr);
  Vec dx(N * C, 0.0);
  layer_norm_backward(dlnf, f.lnf, p.lnf_w, N, C, &g.lnf_w, &g.lnf_b, &dx);
  for (int64_t i = c.layers - 1; i >= 0; --i)
    dx = block_backward(c, p.layers[i], f.layers[i], dx, &g.layers[i]);
  for (int64_t r = 0; r < N; ++r)  // x0 = wte[idx] + wpe[t]
    for (int64_t i = 0; i < C; ++i) {
      g.wte[idx[r] * C + i] += dx[r * C + i];
      g.wpe[(r % c.seq) * C + i] += dx[r * C + i];
    }
  return g;
}

}  // namespace rg::exactness
