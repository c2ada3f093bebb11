// Bivariate stochastic volatility model models.MSV{D: 2} with its default
// prior, for a NUTS reference posterior (examples/fit/gridref/README.md):
//
//   x_t = diag(phi) x_{t-1} + eta_t,  eta_t ~ N(0, Sigma),
//   Sigma = diag(sigma) R diag(sigma),  R = [1 rho; rho 1],
//   x_0 ~ N(0, P),  P_ij = Sigma_ij / (1 - phi_i phi_j)  (stationary),
//   y_{t,i} = tau_i exp(x_{t,i} / 2) eps_{t,i},  eps_t ~ N(0, I),  t = 1..T.
//
// x_0 carries no observation, so it is integrated out: x_1 = diag(phi) x_0
// + eta_1 has the stationary law N(0, P) too, and the model below starts
// at x_1 ~ N(0, P).
//
// Prior (models.DefaultMSVPrior(2)): (phi_i + 1)/2 ~ Beta(5, 1.5),
// sigma_i^2 ~ InvGamma(2, 0.5), tau_i^2 ~ InvGamma(2, 0.5) (0.5 a scale:
// density of v = sigma^2 proportional to v^(-3) exp(-0.5 / v)), rho ~
// Uniform(-1, 1); each written as the density of the declared parameter,
// normalised, so that the prior part equals models.MSV.LogPrior up to the
// transforms' Jacobians (Stan's logit-scaled transform of (-1, 1) is
// 2 atanh, the library's atanh: a constant log 2 per phi_i and rho).
//
// latent chooses how the sampler sees the latent path (all three define the
// same posterior of (phi, sigma, rho, tau)):
//   0  centred: v = x itself;
//   1  non-centred: v = standard normal shocks, x_1 = chol(P) v_1,
//      x_t = diag(phi) x_{t-1} + chol(Sigma) v_t;
//   2  whitened across the series only: x_t = chol(Sigma) v_t for every t
//      (v_t1 = x_t1/sigma_1, v_t2 = (x_t2/sigma_2 - rho v_t1)/sqrt(1 - rho^2)),
//      with the Jacobian T log det chol(Sigma). When rho is near 1, x_t1 and
//      x_t2 are nearly collinear and v_t2 carries their difference.
data {
  int<lower=1> T;
  matrix[T, 2] y;
  int<lower=0, upper=2> latent;
  int<lower=0, upper=1> prior_only;  // 1: no latent path or likelihood
}
transformed data {
  int Tv = prior_only ? 0 : T;
}
parameters {
  vector<lower=-1, upper=1>[2] phi;
  vector<lower=0>[2] sigma;
  real<lower=-1, upper=1> rho;
  vector<lower=0>[2] tau;
  matrix[Tv, 2] v;  // the latent path, as chosen by latent
}
model {
  // Prior.
  target += beta_lpdf((phi + 1) / 2 | 5, 1.5) - 2 * log(2);
  target += inv_gamma_lpdf(square(sigma) | 2, 0.5) + sum(log(2 * sigma));
  target += inv_gamma_lpdf(square(tau) | 2, 0.5) + sum(log(2 * tau));
  target += -log(2);  // rho ~ Uniform(-1, 1)
  if (!prior_only) {
    real s1 = sigma[1];
    real s2 = sigma[2];
    real r = sqrt(1 - square(rho));
    // Stationary covariance P and its Cholesky factor.
    real p11 = square(s1) / (1 - square(phi[1]));
    real p22 = square(s2) / (1 - square(phi[2]));
    real p12 = rho * s1 * s2 / (1 - phi[1] * phi[2]);
    real l11 = sqrt(p11);
    real l21 = p12 / l11;
    real l22 = sqrt(p22 - square(l21));
    vector[T] x1;
    vector[T] x2;
    if (latent == 1) {
      x1[1] = l11 * v[1, 1];
      x2[1] = l21 * v[1, 1] + l22 * v[1, 2];
      for (t in 2:T) {
        x1[t] = phi[1] * x1[t - 1] + s1 * v[t, 1];
        x2[t] = phi[2] * x2[t - 1] + s2 * (rho * v[t, 1] + r * v[t, 2]);
      }
      target += std_normal_lpdf(to_vector(v));
    } else {
      vector[T - 1] a;
      vector[T - 1] b;
      if (latent == 0) {
        x1 = col(v, 1);
        x2 = col(v, 2);
      } else {
        x1 = s1 * col(v, 1);
        x2 = s2 * (rho * col(v, 1) + r * col(v, 2));
        target += T * (log(s1) + log(s2) + log(r));  // log|dx/dv|
      }
      // x_1 ~ N(0, P): whitened by chol(P).
      {
        real w1 = x1[1] / l11;
        real w2 = (x2[1] - l21 * w1) / l22;
        target += -log(l11) - log(l22) + std_normal_lpdf(w1) + std_normal_lpdf(w2);
      }
      // x_t | x_{t-1} ~ N(diag(phi) x_{t-1}, Sigma), whitened by chol(Sigma).
      a = (x1[2:T] - phi[1] * x1[1:(T - 1)]) / s1;
      b = ((x2[2:T] - phi[2] * x2[1:(T - 1)]) / s2 - rho * a) / r;
      target += -(T - 1) * (log(s1) + log(s2) + log(r)) + std_normal_lpdf(a) + std_normal_lpdf(b);
    }
    target += normal_lpdf(col(y, 1) | 0, tau[1] * exp(x1 / 2));
    target += normal_lpdf(col(y, 2) | 0, tau[2] * exp(x2 / 2));
  }
}
