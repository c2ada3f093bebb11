# NUTS reference posterior of models.MSV{D: 2} (msv.stan) with rstan.
#
#   Rscript examples/fit/gridref/nuts/run_msv.R DATA.csv OUT.json [key=value ...]
#
# DATA.csv: a header line and two columns of returns (the first two columns
# are used). Keys (defaults in brackets): latent [2] (how msv.stan sees the
# latent path: 0 centred, 1 non-centred, 2 whitened across the series), adapt_delta [0.95],
# warmup [1000], iter [1000] (draws per chain after warm-up), chains [4],
# cores [2], seed [1], max_treedepth [10], data_name [DATA.csv as given].
# Writes the reference JSON (the fields of examples/fit/gridref's JSON plus
# "nuts": the sampler's settings and diagnostics) and prints a summary.
suppressPackageStartupMessages(library(rstan))
args <- commandArgs(trailingOnly = TRUE)
if (length(args) < 2) stop("usage: run_msv.R DATA.csv OUT.json [key=value ...]")
opt <- list(latent = 2, adapt_delta = 0.95, warmup = 1000, iter = 1000, chains = 4,
            cores = 2, seed = 1, max_treedepth = 10, data_name = args[1])
for (kv in args[-(1:2)]) {
  p <- strsplit(kv, "=", fixed = TRUE)[[1]]
  if (!(p[1] %in% names(opt))) stop("unknown key ", p[1])
  opt[[p[1]]] <- if (p[1] == "data_name") p[2] else as.numeric(p[2])
}
here <- dirname(sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE)))
d <- read.csv(args[1], header = TRUE)
y <- as.matrix(d[, 1:2])
if (anyNA(y)) stop("the data have missing values; msv.stan has no missing-value handling")
T <- nrow(y)
rstan_options(auto_write = TRUE)  # caches the compiled model as msv.rds here
# Debian's r-cran-bh uses the system Boost headers and has no include directory.
if (!file.exists(rstan_options("boost_lib"))) rstan_options(boost_lib = "/usr/include")
mod <- stan_model(file.path(here, "msv.stan"))
names7 <- c("phi1", "phi2", "sigma1", "sigma2", "rho", "tau1", "tau2")
pars <- c("phi", "sigma", "rho", "tau")
# Start every chain at a dispersed but sensible point (the latent path at 0).
init <- function(chain_id) {
  set.seed(opt$seed * 100 + chain_id)
  list(phi = runif(2, 0.3, 0.9), sigma = runif(2, 0.2, 0.6), rho = runif(1, 0.2, 0.8),
       tau = apply(y, 2, sd) * runif(2, 0.8, 1.2),
       v = matrix(0, T, 2))
}
t0 <- proc.time()
fit <- sampling(mod, data = list(T = T, y = y, latent = as.integer(opt$latent), prior_only = 0L),
                pars = pars, init = init, chains = opt$chains, cores = opt$cores,
                warmup = opt$warmup, iter = opt$warmup + opt$iter, seed = opt$seed,
                control = list(adapt_delta = opt$adapt_delta, max_treedepth = opt$max_treedepth),
                refresh = max(1, (opt$warmup + opt$iter) %/% 10))
wall <- (proc.time() - t0)[["elapsed"]]
chain_secs <- get_elapsed_time(fit)
sp <- get_sampler_params(fit, inc_warmup = FALSE)
div <- sum(sapply(sp, function(s) sum(s[, "divergent__"])))
maxtd <- sum(sapply(sp, function(s) sum(s[, "treedepth__"] >= opt$max_treedepth)))
leap <- sapply(sp, function(s) mean(s[, "n_leapfrog__"]))
stepsize <- sapply(sp, function(s) s[1, "stepsize__"])
arr <- as.array(fit)  # iterations × chains × parameters (kept draws)
pn <- c("phi[1]", "phi[2]", "sigma[1]", "sigma[2]", "rho", "tau[1]", "tau[2]")
rows <- lapply(seq_along(pn), function(k) {
  a <- arr[, , pn[k]]
  v <- as.vector(a)
  q <- quantile(v, c(0.05, 0.5, 0.95), names = FALSE)
  list(name = names7[k], mean = mean(v), sd = sd(v), q05 = q[1], q50 = q[2], q95 = q[3],
       rhat = Rhat(a), bulk = ess_bulk(a), tail = ess_tail(a))
})
num <- function(x) sprintf("%.17g", x)
vec <- function(x) paste0("[", paste(num(x), collapse = ", "), "]")
prow <- sapply(rows, function(r) sprintf(
  '    {\n      "name": "%s",\n      "mean": %s,\n      "sd": %s,\n      "q05": %s,\n      "q50": %s,\n      "q95": %s\n    }',
  r$name, num(r$mean), num(r$sd), num(r$q05), num(r$q50), num(r$q95)))
rhat <- sapply(rows, `[[`, "rhat"); bulk <- sapply(rows, `[[`, "bulk"); tail <- sapply(rows, `[[`, "tail")
method <- sprintf("Stan NUTS (rstan %s), %d chains of %d+%d, adapt_delta %g, %s; %d divergences",
                  packageVersion("rstan"), opt$chains, opt$warmup, opt$iter, opt$adapt_delta,
                  c("centred", "non-centred", "latent path whitened across the series")[opt$latent + 1], div)
command <- paste(c("Rscript examples/fit/gridref/nuts/run_msv.R", args), collapse = " ")
json <- paste0('{\n',
  '  "model": "msv",\n',
  sprintf('  "data": "%s",\n', opt$data_name),
  sprintf('  "T": %d,\n', T),
  sprintf('  "method": "%s",\n', method),
  '  "params": [\n', paste(prow, collapse = ",\n"), '\n  ],\n',
  sprintf('  "ess": %s,\n', num(min(bulk))),
  sprintf('  "draws": %d,\n', as.integer(opt$chains * opt$iter)),
  sprintf('  "seconds": %s,\n', num(wall)),
  sprintf('  "command": "%s",\n', command),
  '  "nuts": {\n',
  sprintf('    "chains": %d,\n    "warmup": %d,\n    "iter": %d,\n', as.integer(opt$chains), as.integer(opt$warmup), as.integer(opt$iter)),
  sprintf('    "adapt_delta": %s,\n    "max_treedepth": %d,\n    "latent": %d,\n', num(opt$adapt_delta), as.integer(opt$max_treedepth), as.integer(opt$latent)),
  sprintf('    "seed": %d,\n', as.integer(opt$seed)),
  sprintf('    "divergences": %d,\n    "max_treedepth_hits": %d,\n', as.integer(div), as.integer(maxtd)),
  sprintf('    "stepsize": %s,\n    "mean_leapfrog": %s,\n', vec(stepsize), vec(leap)),
  sprintf('    "rhat": %s,\n    "bulk_ess": %s,\n    "tail_ess": %s,\n', vec(rhat), vec(bulk), vec(tail)),
  sprintf('    "chain_seconds": %s\n', vec(rowSums(chain_secs))),
  '  }\n}\n')
writeLines(json, args[2], sep = "")
cat(sprintf("\n%s\nT = %d, wall %.1f s, chain time (warm-up + sampling) %s s, sum %.1f s\n", method, T, wall,
            paste(sprintf("%.1f", rowSums(chain_secs)), collapse = " "), sum(chain_secs)))
cat(sprintf("divergences %d, treedepth hits %d, step sizes %s, mean leapfrog steps %s\n", div, maxtd,
            paste(sprintf("%.3g", stepsize), collapse = " "), paste(sprintf("%.0f", leap), collapse = " ")))
cat(sprintf("%-7s %10s %10s %10s %10s %10s %7s %7s %7s\n", "param", "mean", "sd", "q05", "q50", "q95", "Rhat", "bulk", "tail"))
for (r in rows) cat(sprintf("%-7s %10.5f %10.5f %10.5f %10.5f %10.5f %7.4f %7.0f %7.0f\n",
                            r$name, r$mean, r$sd, r$q05, r$q50, r$q95, r$rhat, r$bulk, r$tail))
