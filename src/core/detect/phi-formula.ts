// The suspicion formulas of the accrual detectors, as pure functions of the silence so far and the
// statistics of past inter-arrival times. Every detector in this folder reports its suspicion on the
// φ scale of Hayashibara et al. (SRDS 2004, §3): φ = −log10 P_later(Δ), the decimal exponent of
// the probability that a heartbeat still arrives after a silence of Δ, under the detector's model.
// φ = 1 means a 10 % chance of being wrong, φ = 2 a 1 % chance, and so on.
//
// Three models are used:
// - the normal distribution, computed exactly in the tail (Hayashibara; tenure's watch);
// - Akka's logistic approximation of the normal CDF, 1 / (1 + e^{−y(1.5976 + 0.070566 y²)});
// - Cassandra's exponential model, φ = Δ / (mean · ln 10).

const LN10 = Math.LN10;

/**
 * ln(erfc(z)) for z ≥ 0, through the Chebyshev fit of Numerical Recipes (§6.2, "erfcc"): fractional
 * error below 1.2e-7 everywhere, and computed as a logarithm so that it never underflows in the far
 * tail, where φ detectors live.
 */
export function logErfc(z: number): number {
  if (z < 0) return Math.log(2 - Math.exp(logErfc(-z)));
  const t = 1 / (1 + 0.5 * z);
  const poly =
    -1.26551223 +
    t *
      (1.00002368 +
        t *
          (0.37409196 +
            t *
              (0.09678418 +
                t *
                  (-0.18628806 +
                    t *
                      (0.27886807 +
                        t *
                          (-1.13520398 +
                            t * (1.48851587 + t * (-0.82215223 + t * 0.17087277))))))));
  return Math.log(t) - z * z + poly;
}

/** −log10 of the upper tail Q(y) = P(Z > y) of a standard normal variable. */
export function phiNormalTail(y: number): number {
  if (y < 0) {
    // Q(y) = 1 − Q(−y); no cancellation because Q(−y) ≤ 1/2 here.
    const q = 0.5 * Math.exp(logErfc(-y / Math.SQRT2));
    return -Math.log10(1 - q);
  }
  return -(Math.log(0.5) + logErfc(y / Math.SQRT2)) / LN10;
}

/** ln(1 + e^x) without overflow. */
function softplus(x: number): number {
  return x > 0 ? x + Math.log1p(Math.exp(-x)) : Math.log1p(Math.exp(x));
}

/**
 * −log10(1 − F(y)) for Akka's logistic approximation of the normal CDF,
 * F(y) = 1 / (1 + e^{−a}), a = y (1.5976 + 0.070566 y²). 1 − F = e^{−a} / (1 + e^{−a}), so
 * −ln(1 − F) = a + ln(1 + e^{−a}) = softplus(a). Computed in log space so the tail keeps its
 * precision (the cancellation that actor-ts's PhiAccrualFailureDetector.ts suffers).
 */
export function phiLogisticTail(y: number): number {
  const a = y * (1.5976 + 0.070566 * y * y);
  return softplus(a) / LN10;
}

/** Statistics of the inter-arrival window that a φ formula needs. */
export interface IntervalStats {
  readonly meanMs: number;
  readonly stdDevMs: number;
}

/**
 * φ under the normal model (Hayashibara §3.2) with Akka's two operator knobs: the acceptable pause
 * is added to the mean, and the standard deviation is floored (akka-remote's
 * PhiAccrualFailureDetector.scala).
 */
export function phiNormal(
  silenceMs: number,
  stats: IntervalStats,
  acceptablePauseMs: number,
  minStdDevMs: number,
): number {
  const sd = Math.max(stats.stdDevMs, minStdDevMs);
  return phiNormalTail((silenceMs - stats.meanMs - acceptablePauseMs) / sd);
}

/** φ under Akka's logistic approximation, with the same knobs as `phiNormal`. */
export function phiLogistic(
  silenceMs: number,
  stats: IntervalStats,
  acceptablePauseMs: number,
  minStdDevMs: number,
): number {
  const sd = Math.max(stats.stdDevMs, minStdDevMs);
  return phiLogisticTail((silenceMs - stats.meanMs - acceptablePauseMs) / sd);
}

/**
 * φ under Cassandra's exponential model: P_later(Δ) = e^{−Δ/mean}, so φ = Δ / (mean · ln 10).
 * Cassandra writes this as PHI_FACTOR · Δ / mean with PHI_FACTOR = 1 / ln 10 and convicts above 8,
 * i.e. after 8 · ln 10 ≈ 18.42 mean intervals of silence (CASSANDRA-2597).
 */
export function phiExponential(silenceMs: number, stats: IntervalStats): number {
  if (silenceMs <= 0) return 0;
  return silenceMs / (Math.max(stats.meanMs, 1e-9) * LN10);
}

/**
 * The silence at which a normal-model φ crosses `threshold`: the inverse of `phiNormal`, by
 * bisection. Used to explain a configuration ("suspect after 2.6 s of silence") and in tests.
 */
export function silenceAtPhi(
  threshold: number,
  phi: (silenceMs: number) => number,
  hiMs = 1e7,
): number {
  let lo = 0;
  let hi = hiMs;
  for (let i = 0; i < 100; i++) {
    const mid = (lo + hi) / 2;
    if (phi(mid) >= threshold) hi = mid;
    else lo = mid;
  }
  return hi;
}
