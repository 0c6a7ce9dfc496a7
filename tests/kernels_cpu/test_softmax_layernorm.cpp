#include "tests/kernels_cpu/helpers.h"

namespace rg::test {
namespace {

struct Lines {  // [outer, dim, inner] view of a contiguous shape
  int64_t outer = 1, dim = 1, inner = 1;
  Lines(const Shape& s, int64_t d) {
    for (int64_t i = 0; i < int64_t(s.size()); ++i) (i < d ? outer : i == d ? dim : inner) *= s[i];
  }
  int64_t at(int64_t o, int64_t i, int64_t j) const { return (o * dim + i) * inner + j; }
};

std::vector<double> softmax_reference(const std::vector<double>& x, const Lines& g, bool log) {
  std::vector<double> y(x.size());
  for (int64_t o = 0; o < g.outer; ++o)
    for (int64_t j = 0; j < g.inner; ++j) {
      double mx = -INFINITY, sum = 0;
      for (int64_t i = 0; i < g.dim; ++i) mx = std::max(mx, x[g.at(o, i, j)]);
      for (int64_t i = 0; i < g.dim; ++i) sum += std::exp(x[g.at(o, i, j)] - mx);
      for (int64_t i = 0; i < g.dim; ++i) {
        double v = x[g.at(o, i, j)] - mx;
        y[g.at(o, i, j)] = log ? v - std::log(sum) : std::exp(v) / sum;
      }
    }
  return y;
}

std::vector<double> softmax_backward_reference(const std::vector<double>& dy,
                                               const std::vector<double>& y, const Lines& g,
                                               bool log) {
  std::vector<double> dx(y.size());
  for (int64_t o = 0; o < g.outer; ++o)
    for (int64_t j = 0; j < g.inner; ++j) {
      double s = 0;
      for (int64_t i = 0; i < g.dim; ++i)
        s += log ? dy[g.at(o, i, j)] : dy[g.at(o, i, j)] * y[g.at(o, i, j)];
      for (int64_t i = 0; i < g.dim; ++i) {
        int64_t k = g.at(o, i, j);
        dx[k] = log ? dy[k] - std::exp(y[k]) * s : y[k] * (dy[k] - s);
      }
    }
  return dx;
}

TEST_CASE("softmax and log_softmax forward and backward match an f64 reference along any dim") {
  std::mt19937 rng(7);
  const std::vector<Shape> shapes = {{7}, {3, 5}, {4, 1, 6}, {2, 3, 70, 5},
                                     {1}, {0, 4}, {5, 130},  {3, 200, 3}};
  for (DType dt : {DType::f32, DType::f64, DType::bf16})
    for (const Shape& shape : shapes)
      for (int64_t dim = 0; dim < int64_t(shape.size()); ++dim)
        for (bool log : {false, true}) {
          std::string what = std::string(log ? "log_softmax " : "softmax ") + shape_str(shape) +
                             " dim " + std::to_string(dim) + " " + dtype_name(dt);
          Tensor x = random_tensor(shape, dt, rng, -8, 8), y = empty(shape, dt);
          cpu().softmax(y, x, dim, log);
          Lines g(shape, dim);
          double tol = dt == DType::bf16 ? 2e-2 : tolerance(dt) * 10;
          check_close(values(y), softmax_reference(values(x), g, log), tol, what);
          Tensor dy = random_tensor(shape, dt, rng), dx = empty(shape, dt);
          cpu().softmax_backward(dx, dy, y, dim, log);
          check_close(values(dx), softmax_backward_reference(values(dy), values(y), g, log),
                      dt == DType::bf16 ? 5e-2 : tol, what + " backward");
        }
}

TEST_CASE("softmax is stable for large logits") {
  Tensor x = empty({1, 3}, DType::f32), y = empty({1, 3}, DType::f32);
  set(x, 0, 1000), set(x, 1, 1000), set(x, 2, -1000);
  cpu().softmax(y, x, 1, false);
  check_close(values(y), {0.5, 0.5, 0}, 1e-6, "large logits");
  cpu().softmax(y, x, 1, true);
  check_close(values(y), {-std::log(2.0), -std::log(2.0), -2000 - std::log(2.0)}, 1e-6,
              "large log");
}

void layernorm_reference(const std::vector<double>& x, const std::vector<double>* w,
                         const std::vector<double>* b, int64_t n, int64_t c, double eps,
                         std::vector<double>& out, std::vector<double>& mean,
                         std::vector<double>& rstd) {
  out.assign(n * c, 0), mean.assign(n, 0), rstd.assign(n, 0);
  for (int64_t r = 0; r < n; ++r) {
    double mu = 0, var = 0;
    for (int64_t i = 0; i < c; ++i) mu += x[r * c + i] / c;
    for (int64_t i = 0; i < c; ++i) var += (x[r * c + i] - mu) * (x[r * c + i] - mu) / c;
    mean[r] = mu, rstd[r] = 1 / std::sqrt(var + eps);
    for (int64_t i = 0; i < c; ++i)
      out[r * c + i] = (x[r * c + i] - mu) * rstd[r] * (w ? (*w)[i] : 1) + (b ? (*b)[i] : 0);
  }
}

TEST_CASE("layernorm forward and backward match an f64 reference, with and without affine") {
  std::mt19937 rng(8);
  const std::vector<Shape> shapes = {{4, 16}, {2, 3, 33}, {1, 1}, {0, 8}, {64, 257}, {5, 1}};
  for (DType dt : {DType::f32, DType::f64, DType::bf16})
    for (const Shape& shape : shapes)
      for (int affine = 0; affine < 3; ++affine) {  // none, weight+bias, weight only
        std::string what = "layernorm " + shape_str(shape) + " " + dtype_name(dt) + " affine " +
                           std::to_string(affine);
        DType st = dt == DType::f64 ? DType::f64 : DType::f32;
        int64_t c = shape.back(), n = numel_of(shape) / c;
        Tensor x = random_tensor(shape, dt, rng, -3, 5), out = empty(shape, dt);
        Tensor mean = empty({n}, st), rstd = empty({n}, st), w, b;
        if (affine) w = random_tensor({c}, dt, rng);
        if (affine == 1) b = random_tensor({c}, dt, rng);
        cpu().layernorm(out, mean, rstd, x, w, b, 1e-5);
        std::vector<double> vx = values(x), vw, vb, ro, rm, rr;
        if (w.defined()) vw = values(w);
        if (b.defined()) vb = values(b);
        layernorm_reference(vx, w.defined() ? &vw : nullptr, b.defined() ? &vb : nullptr, n, c,
                            1e-5, ro, rm, rr);
        double tol = dt == DType::bf16 ? 2e-2 : tolerance(dt) * 20;
        check_close(values(out), ro, tol, what);
        check_close(values(mean), rm, tolerance(st) * 10, what + " mean");
        check_close(values(rstd), rr, tolerance(st) * 10, what + " rstd");

        // Backward against central differences of the f64 reference of sum(out * dy).
        Tensor dy = random_tensor(shape, dt, rng), dx = empty(shape, dt);
        Tensor dw = affine ? empty({c}, dt) : Tensor(),
               db = affine == 1 ? empty({c}, dt) : Tensor();
        cpu().layernorm_backward(dx, dw, db, dy, x, mean, rstd, w);
        std::vector<double> vdy = values(dy);
        auto objective = [&](const std::vector<double>& xx, const std::vector<double>* ww,
                             const std::vector<double>* bb) {
          std::vector<double> o, m, r;
          layernorm_reference(xx, ww, bb, n, c, 1e-5, o, m, r);
          double s = 0;
          for (size_t i = 0; i < o.size(); ++i) s += o[i] * vdy[i];
          return s;
        };
        auto numeric = [&](std::vector<double>& param, auto call) {
          std::vector<double> g(param.size());
          for (size_t i = 0; i < param.size(); ++i) {
            double keep = param[i], h = 1e-6 * std::max(1.0, std::abs(keep));
            param[i] = keep + h;
            double up = call();
            param[i] = keep - h;
            double down = call();
            param[i] = keep;
            g[i] = (up - down) / (2 * h);
          }
          return g;
        };
        auto wp = [&] { return w.defined() ? &vw : nullptr; };
        auto bp = [&] { return b.defined() ? &vb : nullptr; };
        double gtol = dt == DType::bf16 ? 5e-2 : dt == DType::f32 ? 1e-4 : 1e-6;
        if (numel_of(shape) <= 300) {
          check_close(values(dx), numeric(vx, [&] { return objective(vx, wp(), bp()); }), gtol,
                      what + " dx", 1);
          if (affine)
            check_close(values(dw), numeric(vw, [&] { return objective(vx, wp(), bp()); }), gtol,
                        what + " dweight", 1);
          if (affine == 1)
            check_close(values(db), numeric(vb, [&] { return objective(vx, wp(), bp()); }), gtol,
                        what + " dbias", 1);
        }
      }
}

TEST_CASE("layernorm_backward parameter grads are bit-identical with 1 and 2 threads") {
  std::mt19937 rng(9);
  Tensor x = random_tensor({300, 200}, DType::f32, rng),
         dy = random_tensor({300, 200}, DType::f32, rng);
  Tensor w = random_tensor({200}, DType::f32, rng), out = empty({300, 200});
  Tensor mean = empty({300}), rstd = empty({300});
  cpu().layernorm(out, mean, rstd, x, w, Tensor(), 1e-5);
  Tensor dx1 = empty({300, 200}), dw1 = empty({200}), db1 = empty({200});
  Tensor dx2 = empty({300, 200}), dw2 = empty({200}), db2 = empty({200});
  with_threads(1, [&] { cpu().layernorm_backward(dx1, dw1, db1, dy, x, mean, rstd, w); });
  with_threads(2, [&] { cpu().layernorm_backward(dx2, dw2, db2, dy, x, mean, rstd, w); });
  CHECK(values(dx1) == values(dx2));
  CHECK(values(dw1) == values(dw2));
  CHECK(values(db1) == values(db2));
}

}  // namespace
}  // namespace rg::test
