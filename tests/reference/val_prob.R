# Reference values of calibration_summary, computed by R.
#
# Usage: Rscript val_prob.R DATA.csv RESULTS.csv
#
# DATA.csv has columns dataset, p, y, w (w: integer frequency weights; each
# row is repeated w times). For every data set this writes, one statistic a
# line (dataset, statistic, value):
#
# * "valprob:<name>": every statistic of rms::val.prob(p, y), unchanged;
# * the summary's definitions computed here from R's own functions: glm for
#   the slope and the joint intercept, the score equation for the intercept
#   with the logit as an offset, lowess + approx for the gaps (as val.prob
#   does), the likelihoods for R2, D, U and Q on the rows with a finite
#   logit (val.prob takes D and R2 from lrm.fit, whose likelihood clamps the
#   log-odds to [-30, 30]), and the exact C from mid-ranks over every row.
suppressPackageStartupMessages(library(rms))

args <- commandArgs(trailingOnly = TRUE)
data <- read.csv(args[1], colClasses = c("character", "numeric", "numeric", "integer"))
out <- list()
put <- function(dataset, stat, value) {
  out[[length(out) + 1]] <<- data.frame(
    dataset = dataset, statistic = stat, value = sprintf("%.17g", value)
  )
}

for (name in unique(data$dataset)) {
  d <- data[data$dataset == name, ]
  p <- rep(d$p, d$w)
  y <- rep(d$y, d$w)

  v <- suppressWarnings(val.prob(p, y, pl = FALSE))
  for (k in names(v)) put(name, paste0("valprob:", k), v[[k]])

  lg <- qlogis(p)
  i <- is.finite(lg)
  yi <- y[i]
  lgi <- lg[i]
  joint <- glm(
    yi ~ lgi, family = binomial, control = glm.control(epsilon = 1e-14, maxit = 100)
  )
  cj <- summary(joint)$coefficients
  put(name, "slope", cj[2, 1])
  put(name, "slope_se", cj[2, 2])
  put(name, "joint_intercept", cj[1, 1])
  put(name, "joint_intercept_se", cj[1, 2])
  # The intercept with logit(p) as an offset: the root of its score equation
  # (glm's iterations stall on offsets of -600).
  score <- function(a) sum(yi - plogis(a + lgi))
  a <- uniroot(score, c(-50, 50), tol = 1e-14)$root
  put(name, "intercept", a)
  put(name, "intercept_se", 1 / sqrt(sum(plogis(a + lgi) * plogis(-a - lgi))))

  n <- sum(i)
  ybar <- mean(yi)
  L0 <- -2 * sum(yi * log(ybar) + (1 - yi) * log(1 - ybar))
  L01 <- -2 * sum(yi * lgi - log1p(exp(lgi)))
  lr <- L0 - L01
  u_chi2 <- L01 - deviance(joint)
  put(name, "nagelkerke_r2", (1 - exp(-lr / n)) / (1 - exp(-L0 / n)))
  put(name, "discrimination_index", (lr - 1) / n)
  put(name, "unreliability_index", (u_chi2 - 2) / n)
  put(name, "unreliability_pvalue", pchisq(u_chi2, 2, lower.tail = FALSE))
  put(name, "quality_index", (lr - 1) / n - (u_chi2 - 2) / n)
  put(name, "n_dropped", sum(!i))

  sm <- lowess(p, y, iter = 0)
  er <- abs(p - approx(sm, xout = p, ties = mean)$y)
  put(name, "emax", max(er))
  put(name, "e90", unname(quantile(er, 0.9)))
  put(name, "e50", median(er))
  put(name, "ici", mean(er))

  n1 <- sum(y == 1)
  n0 <- sum(y == 0)
  C <- (sum(rank(p)[y == 1]) - n1 * (n1 + 1) / 2) / (n1 * n0)
  put(name, "c_index", C)
  put(name, "dxy", 2 * C - 1)
  put(name, "brier", mean((p - y)^2))
  put(name, "mean_difference", mean(y - p))
}

write.csv(do.call(rbind, out), args[2], row.names = FALSE, quote = FALSE)
