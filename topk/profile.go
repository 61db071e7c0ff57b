package topk

// Decode trajectories calibrated to the GVR paper's measurements on real
// DeepSeek-V3.2 indexer logits (gvr-paper.tex):
//
//   - the overlap alpha of consecutive steps' Top-K (K = 2048): about 44% on
//     layers 20-60 and about 1.5% on layers 0-1, against about 2.9% for
//     random indices (section "Ablation Study", table tab:ablation; the
//     rows have N ≈ 70,690, and K/N = 2.9%);
//   - the family that fits each layer's scores best and the layer's mean
//     logit (appendix "Per-Layer Distribution Fitting Details", table
//     tab:distribution-analysis): lognorm for layer 0 (mean -4.12),
//     logistic for layer 1 (-0.47), beta for layers 20, 21, 40, 41 and 42,
//     weibull_min for layers 22 and 60 (-2.26 for 60); and layer 0's value
//     range, 17.28, the widest.
//
// The paper gives no shape or scale parameters, only the family, the mean,
// the excess kurtosis and layer 0's range, so the shapes below are chosen to
// come near the kurtosis where the family can reach it, and said so.
//
// Construction: each position p keeps a latent standard normal x_p, which
// evolves between steps as a stationary AR(1) process (a Gaussian copula),
//
//	x_p(t) = rho x_p(t-1) + sqrt(1 - rho^2) eps,   eps ~ N(0, 1),
//
// and its score is the profile's quantile function at Phi(x_p), so every
// row's marginal is exactly the profile's distribution. Positions the row
// gains get a fresh x_p ~ N(0, 1). The map from x to score is increasing
// and the same for every position, so a row's Top-K is the Top-K of its
// latents: the overlap depends on rho, K and N, not on the family. rho is
// calibrated from the bivariate normal (LatentRho), and the overlap of
// every step is measured from the rows themselves with Reference
// (Trajectory.Alphas), never assumed.

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Family is a distribution family of a layer's scores, as the paper's fits
// name it.
type Family int

const (
	Lognormal Family = iota // lognorm: exp(A z), z ~ N(0, 1)
	Logistic                // logistic: log(u / (1-u)), u ~ U(0, 1)
	Beta                    // beta: Beta(A, B) on [0, 1]
	Weibull                 // weibull_min: shape A, P(Y > y) = exp(-y^A)
)

func (f Family) String() string {
	switch f {
	case Lognormal:
		return "lognormal"
	case Logistic:
		return "logistic"
	case Beta:
		return "beta"
	case Weibull:
		return "weibull"
	}
	return fmt.Sprintf("Family(%d)", int(f))
}

// Profile describes one layer's decode trajectory: its scores are Mean + SD
// (Y - E[Y]) / sd(Y), Y of Family with shape parameters A (and B), and
// consecutive steps' Top-K overlap by Alpha in expectation.
type Profile struct {
	Name   string
	Family Family
	A, B   float64 // shape: lognormal sigma; Beta's a and b; Weibull's k; logistic none
	Mean   float64 // mean logit
	SD     float64 // standard deviation of the scores
	Alpha  float64 // target overlap of consecutive steps' Top-K
}

// The paper's layers. Alpha: 1.5% for layers 0-1, 44% for layers 20-60
// (tab:ablation). Mean: tab:distribution-analysis. Shapes and SD are ours.
var (
	// Layer0: lognorm (42.9% of rows; beta 26.0%, weibull the rest), mean
	// -4.12, excess kurtosis -0.128, range 17.28. No lognormal has negative
	// excess kurtosis (the layer is a mix), so sigma = 0.2 keeps it small
	// (+0.68, skewness 0.62); SD = 1.9 makes the range of a row of 70,690
	// about 17.3 (TestProfileRange).
	Layer0 = Profile{Name: "layer0", Family: Lognormal, A: 0.2, Mean: -4.12, SD: 1.9, Alpha: 0.015}

	// Layer1: logistic (59.4% of rows; Student-t 40.6%), mean -0.47, excess
	// kurtosis +0.931 (the logistic's is 1.2). SD 1: the paper gives no
	// spread.
	Layer1 = Profile{Name: "layer1", Family: Logistic, Mean: -0.47, SD: 1, Alpha: 0.015}

	// Middle: layer 21, beta in 99.7% of its rows, mean -0.87, excess
	// kurtosis -0.337; Beta(3, 5.5) has -0.343 and is right-skewed. SD 1.
	Middle = Profile{Name: "middle", Family: Beta, A: 3, B: 5.5, Mean: -0.87, SD: 1, Alpha: 0.44}

	// Layer60: weibull_min (93.6% of rows), mean -2.26, excess kurtosis
	// -0.396, below any Weibull's (at least -0.289, at k ≈ 3.6): k = 3.6,
	// the nearest. SD 1.
	Layer60 = Profile{Name: "layer60", Family: Weibull, A: 3.6, Mean: -2.26, SD: 1, Alpha: 0.44}
)

// Profiles lists the named profiles.
var Profiles = []Profile{Layer0, Layer1, Middle, Layer60}

// moments returns the mean and standard deviation of the family's Y.
func (p Profile) moments() (m, s float64) {
	var v float64
	switch p.Family {
	case Lognormal:
		e := math.Exp(p.A * p.A)
		m, v = math.Sqrt(e), (e-1)*e
	case Logistic:
		m, v = 0, math.Pi*math.Pi/3
	case Beta:
		a, b := p.A, p.B
		m, v = a/(a+b), a*b/((a+b)*(a+b)*(a+b+1))
	case Weibull:
		g1, g2 := math.Gamma(1+1/p.A), math.Gamma(1+2/p.A)
		m, v = g1, g2-g1*g1
	default:
		panic(fmt.Sprintf("topk: unknown family %v", p.Family))
	}
	return m, math.Sqrt(v)
}

// scorer maps a latent standard normal to the profile's score.
type scorer struct {
	p        Profile
	mul, add float64 // score = add + mul*Y
	lbeta    float64 // log B(A, B) for Beta; B(a, b) = B(b, a)
	invA     float64 // 1/A, Weibull's exponent
}

func newScorer(p Profile) scorer {
	m, s := p.moments()
	sc := scorer{p: p, mul: p.SD / s}
	sc.add = p.Mean - sc.mul*m
	if p.Family == Beta {
		sc.lbeta = lbeta(p.A, p.B)
	}
	if p.A != 0 {
		sc.invA = 1 / p.A
	}
	return sc
}

// score is add + mul * Q(Phi(z)), Q the family's quantile function,
// computed without forming Phi(z) where a tail would lose precision.
func (sc scorer) score(z float64) float64 {
	return sc.add + sc.mul*sc.y(z)
}

func (sc scorer) y(z float64) float64 {
	switch sc.p.Family {
	case Lognormal:
		return math.Exp(sc.p.A * z)
	case Logistic:
		// log(u/(1-u)) with u = Phi(z), 1-u = Phi(-z).
		return logPhi(z) - logPhi(-z)
	case Weibull:
		// (-log(1-u))^(1/k), 1-u = Phi(-z).
		var l float64
		if z < 0 {
			l = -math.Log1p(-phi(z))
		} else {
			l = -logPhi(-z)
		}
		return math.Pow(l, sc.invA)
	case Beta:
		// Solve in the lower tail: Y = 1 - Beta(b, a)'s quantile at Phi(-z).
		if z <= 0 {
			return betaInv(sc.p.A, sc.p.B, phi(z), z, sc.lbeta)
		}
		return 1 - betaInv(sc.p.B, sc.p.A, phi(-z), -z, sc.lbeta)
	}
	panic(fmt.Sprintf("topk: unknown family %v", sc.p.Family))
}

// phi is the standard normal CDF.
func phi(z float64) float64 { return 0.5 * math.Erfc(-z/math.Sqrt2) }

// logPhi is log(phi(z)), accurate far in the lower tail too.
func logPhi(z float64) float64 {
	if z > -30 {
		return math.Log(phi(z))
	}
	// Mills ratio: phi(z) ≈ pdf(z)/|z| (1 - 1/z^2 + 3/z^4).
	z2 := z * z
	return -z2/2 - math.Log(-z*math.Sqrt(2*math.Pi)) + math.Log1p(-1/z2+3/(z2*z2))
}

func lbeta(a, b float64) float64 {
	la, _ := math.Lgamma(a)
	lb, _ := math.Lgamma(b)
	lab, _ := math.Lgamma(a + b)
	return la + lb - lab
}

// betaInc is the regularized incomplete beta function I_x(a, b), by its
// continued fraction (Numerical Recipes, betai), on the side where it
// converges fast.
func betaInc(a, b, x, lb float64) float64 {
	if x <= 0 {
		return 0
	}
	if x >= 1 {
		return 1
	}
	front := math.Exp(a*math.Log(x) + b*math.Log1p(-x) - lb)
	if x < (a+1)/(a+b+2) {
		return front * betaCF(a, b, x) / a
	}
	return 1 - front*betaCF(b, a, 1-x)/b
}

// betaCF evaluates the incomplete beta's continued fraction by the modified
// Lentz method.
func betaCF(a, b, x float64) float64 {
	const eps, tiny = 1e-16, 1e-300
	qab, qap, qam := a+b, a+1, a-1
	c, d := 1.0, 1-qab*x/qap
	if math.Abs(d) < tiny {
		d = tiny
	}
	d = 1 / d
	h := d
	for m := 1.0; m <= 1000; m++ {
		m2 := 2 * m
		for _, aa := range [2]float64{
			m * (b - m) * x / ((qam + m2) * (a + m2)),
			-(a + m) * (qab + m) * x / ((a + m2) * (qap + m2)),
		} {
			d = 1 + aa*d
			if math.Abs(d) < tiny {
				d = tiny
			}
			c = 1 + aa/c
			if math.Abs(c) < tiny {
				c = tiny
			}
			d = 1 / d
			h *= d * c
		}
		if math.Abs(d*c-1) < eps {
			break
		}
	}
	return h
}

// betaInv is the x in (0, 1) with I_x(a, b) = u: Newton's method on
// betaInc, kept inside a bisection bracket, from Numerical Recipes'
// starting guess (invbetai, for a, b >= 1), which needs the normal deviate
// z = Phi^-1(u) that the caller already has.
func betaInv(a, b, u, z, lb float64) float64 {
	if u <= 0 {
		return 0
	}
	if u >= 1 {
		return 1
	}
	var x float64
	if a >= 1 && b >= 1 {
		w := -z // NR's x is the upper-tail deviate
		al := (w*w - 3) / 6
		h := 2 / (1/(2*a-1) + 1/(2*b-1))
		w = w*math.Sqrt(al+h)/h - (1/(2*b-1)-1/(2*a-1))*(al+5.0/6-2/(3*h))
		x = a / (a + b*math.Exp(2*w))
	} else {
		x = a / (a + b)
	}
	lo, hi := 0.0, 1.0
	for range 200 {
		f := betaInc(a, b, x, lb) - u
		if f < 0 {
			lo = x
		} else {
			hi = x
		}
		dens := math.Exp((a-1)*math.Log(x) + (b-1)*math.Log1p(-x) - lb)
		nx := x - f/dens
		if !(nx > lo && nx < hi) {
			nx = lo + (hi-lo)/2
		}
		if math.Abs(nx-x) <= 1e-13*x || hi-lo <= 1e-15*x {
			return nx
		}
		x = nx
	}
	return x
}

// LatentRho is the correlation rho of a standard bivariate normal (X1, X2)
// with P(X2 > t | X1 > t) = alpha, t the normal quantile of 1 - k/n: the
// expected overlap of consecutive Top-K sets of k out of n under the AR(1)
// latent. alpha below k/n (random indices' overlap) gives a negative rho,
// as layers 0-1 need at N ≈ 70K (1.5% < 2.9%). k >= n gives 0.
func LatentRho(alpha float64, k, n int) float64 {
	if k >= n || k <= 0 {
		return 0
	}
	t := math.Sqrt2 * math.Erfcinv(2*float64(k)/float64(n))
	lo, hi := -0.9999, 0.9999
	for range 60 {
		mid := (lo + hi) / 2
		if latentOverlap(mid, t) < alpha {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}

// latentOverlap is P(X2 > t | X1 > t) for correlation rho:
// ∫_t^∞ pdf(x) P(X2 > t | X1 = x) dx / P(X1 > t), by Simpson's rule.
func latentOverlap(rho, t float64) float64 {
	s := math.Sqrt(1 - rho*rho)
	const n, width = 4000, 12.0
	h := width / n
	sum := 0.0
	for i := 0; i <= n; i++ {
		x := t + float64(i)*h
		f := math.Exp(-x*x/2) / math.Sqrt(2*math.Pi) * phi(-(t-rho*x)/s)
		switch {
		case i == 0 || i == n:
			sum += f
		case i%2 == 1:
			sum += 4 * f
		default:
			sum += 2 * f
		}
	}
	return sum * h / 3 / phi(-t)
}

// Trajectory is a seeded decode trajectory of one layer's row: Next returns
// step after step a row that grows by NextN positions a step, and measures
// the overlap of its Top-K with the previous step's.
type Trajectory struct {
	sc      scorer
	k       int
	start   int
	nextN   int
	seed    uint64
	rho     float64
	x       []float64 // latent per position
	step    int
	prevTop []int32
	alphas  []float64
}

// trajBlock is the number of positions that share one generator: rows are
// generated in parallel by blocks, each block from its own PCG seeded by
// (seed, step, block), so the rows do not depend on GOMAXPROCS.
const trajBlock = 4096

// NewTrajectory starts a trajectory of profile p whose first row has start
// positions and each next row nextN more, with rho calibrated (LatentRho)
// for p.Alpha at Top-K k and length start. The latents depend only on seed,
// rho and the lengths, so profiles of the same alpha and seed share their
// Top-K sets: give each layer its own seed.
func NewTrajectory(p Profile, k, start, nextN int, seed uint64) *Trajectory {
	if start < 0 || nextN < 0 || k < 0 {
		panic(fmt.Sprintf("topk: NewTrajectory(k=%d, start=%d, nextN=%d)", k, start, nextN))
	}
	return &Trajectory{sc: newScorer(p), k: k, start: start, nextN: nextN, seed: seed,
		rho: LatentRho(p.Alpha, k, start)}
}

// Rho is the latent correlation between consecutive steps.
func (t *Trajectory) Rho() float64 { return t.rho }

// Len is the length of the next row: start + steps so far * nextN.
func (t *Trajectory) Len() int { return t.start + t.step*t.nextN }

// Next returns the next row's scores and its prediction: the previous
// step's Top-K (Reference, as a set), nil at the first step. It measures
// the overlap of the row's Top-K with that prediction (Alphas).
func (t *Trajectory) Next() (scores []float32, pred []int32) {
	n := t.Len()
	prev := len(t.x)
	t.x = append(t.x, make([]float64, n-prev)...)
	scores = make([]float32, n)
	rho, s := t.rho, math.Sqrt(1-t.rho*t.rho)
	blocks := (n + trajBlock - 1) / trajBlock
	parallel(blocks, func(b int) {
		rng := rand.New(rand.NewPCG(t.seed, uint64(t.step)<<32|uint64(b)))
		for p := b * trajBlock; p < min((b+1)*trajBlock, n); p++ {
			e := rng.NormFloat64()
			if p < prev {
				t.x[p] = rho*t.x[p] + s*e
			} else {
				t.x[p] = e
			}
			scores[p] = float32(t.sc.score(t.x[p]))
		}
	})
	top, _ := Reference(scores, t.k, false)
	pred = t.prevTop
	if pred != nil {
		t.alphas = append(t.alphas, Overlap(pred, top))
	}
	t.prevTop = top
	t.step++
	return scores, pred
}

// Alphas returns the measured overlap of each step's Top-K with the
// previous step's, one per step after the first.
func (t *Trajectory) Alphas() []float64 { return append([]float64(nil), t.alphas...) }

// Alpha is the mean of Alphas (NaN before the second step).
func (t *Trajectory) Alpha() float64 {
	if len(t.alphas) == 0 {
		return math.NaN()
	}
	s := 0.0
	for _, a := range t.alphas {
		s += a
	}
	return s / float64(len(t.alphas))
}

// Overlap is the fraction of cur's indices that are also in prev: the
// paper's alpha when prev is the prediction and cur the exact Top-K.
// Indices -1 (Reference's padding) are ignored; an empty cur gives 0.
func Overlap(prev, cur []int32) float64 {
	in := make(map[int32]bool, len(prev))
	for _, i := range prev {
		if i >= 0 {
			in[i] = true
		}
	}
	hit, n := 0, 0
	for _, i := range cur {
		if i < 0 {
			continue
		}
		n++
		if in[i] {
			hit++
		}
	}
	if n == 0 {
		return 0
	}
	return float64(hit) / float64(n)
}
