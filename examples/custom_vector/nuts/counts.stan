// The example's model (../model.go) with its prior, for a NUTS reference
// posterior computed without any code of the library:
//
//   x_t = diag(phi) x_{t-1} + eta_t,  eta_t ~ N(0, Sigma),
//   Sigma = [sigma1^2, rho sigma1 sigma2; rho sigma1 sigma2, sigma2^2],
//   x_0 ~ N(0, P),  P_ij = Sigma_ij / (1 - phi_i phi_j)  (stationary),
//   y_{t,i} ~ Poisson(exp(c_i + x_{t,i})),  t = 1..T.
//
// x_0 carries no observation, so it is integrated out: x_1 has the
// stationary law N(0, P) too, and the program starts there. The latent
// path is sampled non-centred, through its standard normal shocks v.
//
// Prior (NewCounts): (phi_i + 1)/2 ~ Beta(5, 1.5), sigma_i^2 ~
// InvGamma(2, 0.5), rho ~ Uniform(-1, 1), c_i ~ N(0, 3^2), each written as
// the density of the declared parameter.
data {
  int<lower=1> T;
  int<lower=0> y[T, 2];  // rstan 2.21 (Debian 12) reads the older array syntax
}
parameters {
  vector<lower=-1, upper=1>[2] phi;
  vector<lower=0>[2] sigma;
  real<lower=-1, upper=1> rho;
  vector[2] c;
  matrix[T, 2] v;
}
model {
  target += beta_lpdf((phi + 1) / 2 | 5, 1.5) - 2 * log(2);
  target += inv_gamma_lpdf(square(sigma) | 2, 0.5) + sum(log(2 * sigma));
  target += -log(2);
  target += normal_lpdf(c | 0, 3);
  {
    real s1 = sigma[1];
    real s2 = sigma[2];
    real r = sqrt(1 - square(rho));
    real p11 = square(s1) / (1 - square(phi[1]));
    real p22 = square(s2) / (1 - square(phi[2]));
    real p12 = rho * s1 * s2 / (1 - phi[1] * phi[2]);
    real l11 = sqrt(p11);
    real l21 = p12 / l11;
    real l22 = sqrt(p22 - square(l21));
    vector[T] x1;
    vector[T] x2;
    x1[1] = l11 * v[1, 1];
    x2[1] = l21 * v[1, 1] + l22 * v[1, 2];
    for (t in 2:T) {
      x1[t] = phi[1] * x1[t - 1] + s1 * v[t, 1];
      x2[t] = phi[2] * x2[t - 1] + s2 * (rho * v[t, 1] + r * v[t, 2]);
    }
    target += std_normal_lpdf(to_vector(v));
    target += poisson_log_lpmf(y[:, 1] | c[1] + x1);
    target += poisson_log_lpmf(y[:, 2] | c[2] + x2);
  }
}
