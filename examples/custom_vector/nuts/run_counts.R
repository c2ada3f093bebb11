# NUTS reference posterior of the example's model (counts.stan) with rstan.
#
#   Rscript examples/custom_vector/nuts/run_counts.R DATA.csv OUT.json [key=value ...]
#
# DATA.csv: the header y1,y2 and two columns of counts, as
# go run ./examples/custom_vector -write DATA.csv writes them. Keys
# (defaults in brackets): adapt_delta [0.95], warmup [1000], iter [1000]
# (draws per chain after warm-up), chains [4], cores [2], seed [1],
# data_name [DATA.csv as given]. Writes the reference JSON (model, data,
# T, method, params: name, mean, sd, q05, q50, q95; ess, draws, seconds,
# command, nuts: the sampler's diagnostics) and prints a summary.
suppressPackageStartupMessages(library(rstan))
args <- commandArgs(trailingOnly = TRUE)
if (length(args) < 2) stop("usage: run_counts.R DATA.csv OUT.json [key=value ...]")
opt <- list(adapt_delta = 0.95, warmup = 1000, iter = 1000, chains = 4, cores = 2, seed = 1,
            data_name = args[1])
for (kv in args[-(1:2)]) {
  p <- strsplit(kv, "=", fixed = TRUE)[[1]]
  if (!(p[1] %in% names(opt))) stop("unknown key ", p[1])
  opt[[p[1]]] <- if (p[1] == "data_name") p[2] else as.numeric(p[2])
}
here <- dirname(sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE)))
d <- read.csv(args[1], header = TRUE)
y <- as.matrix(d[, 1:2])
if (anyNA(y)) stop("the data have missing values; counts.stan has no missing-value handling")
storage.mode(y) <- "integer"
T <- nrow(y)
rstan_options(auto_write = TRUE)  # caches the compiled model as counts.rds here
if (!file.exists(rstan_options("boost_lib"))) rstan_options(boost_lib = "/usr/include")
mod <- stan_model(file.path(here, "counts.stan"))
names7 <- c("phi1", "phi2", "sigma1", "sigma2", "rho", "c1", "c2")
pars <- c("phi", "sigma", "rho", "c")
init <- function(chain_id) {
  set.seed(opt$seed * 100 + chain_id)
  list(phi = runif(2, 0.3, 0.9), sigma = runif(2, 0.2, 0.6), rho = runif(1, -0.5, 0.5),
       c = log(colMeans(y) + 0.5) + runif(2, -0.2, 0.2), v = matrix(0, T, 2))
}
t0 <- proc.time()
fit <- sampling(mod, data = list(T = T, y = y), pars = pars, init = init, chains = opt$chains,
                cores = opt$cores, warmup = opt$warmup, iter = opt$warmup + opt$iter, seed = opt$seed,
                control = list(adapt_delta = opt$adapt_delta), refresh = max(1, (opt$warmup + opt$iter) %/% 10))
wall <- (proc.time() - t0)[["elapsed"]]
chain_secs <- get_elapsed_time(fit)
sp <- get_sampler_params(fit, inc_warmup = FALSE)
div <- sum(sapply(sp, function(s) sum(s[, "divergent__"])))
arr <- as.array(fit)
pn <- c("phi[1]", "phi[2]", "sigma[1]", "sigma[2]", "rho", "c[1]", "c[2]")
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
method <- sprintf("Stan NUTS (rstan %s), %d chains of %d+%d, adapt_delta %g, non-centred latent path; %d divergences",
                  packageVersion("rstan"), opt$chains, opt$warmup, opt$iter, opt$adapt_delta, div)
command <- paste(c("Rscript examples/custom_vector/nuts/run_counts.R", args), collapse = " ")
json <- paste0('{\n',
  '  "model": "counts",\n',
  sprintf('  "data": "%s",\n', opt$data_name),
  sprintf('  "T": %d,\n', T),
  sprintf('  "method": "%s",\n', method),
  '  "params": [\n', paste(prow, collapse = ",\n"), '\n  ],\n',
  sprintf('  "ess": %s,\n', num(min(c(bulk, tail)))),
  sprintf('  "draws": %d,\n', as.integer(opt$chains * opt$iter)),
  sprintf('  "seconds": %s,\n', num(wall)),
  sprintf('  "command": "%s",\n', command),
  '  "nuts": {\n',
  sprintf('    "divergences": %d,\n', as.integer(div)),
  sprintf('    "rhat": %s,\n    "bulk_ess": %s,\n    "tail_ess": %s,\n', vec(rhat), vec(bulk), vec(tail)),
  sprintf('    "chain_seconds": %s\n', vec(rowSums(chain_secs))),
  '  }\n}\n')
writeLines(json, args[2], sep = "")
cat(sprintf("\n%s\nT = %d, wall %.1f s, chain seconds %s\n", method, T, wall,
            paste(sprintf("%.1f", rowSums(chain_secs)), collapse = " ")))
cat(sprintf("%-7s %10s %10s %10s %10s %10s %7s %7s %7s\n", "param", "mean", "sd", "q05", "q50", "q95", "Rhat", "bulk", "tail"))
for (r in rows) cat(sprintf("%-7s %10.5f %10.5f %10.5f %10.5f %10.5f %7.4f %7.0f %7.0f\n",
                            r$name, r$mean, r$sd, r$q05, r$q50, r$q95, r$rhat, r$bulk, r$tail))
