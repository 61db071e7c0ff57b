package topk

import (
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
)

func TestBetaInc(t *testing.T) {
	// Closed forms: I_x(1, 1) = x, I_x(2, 2) = 3x^2 - 2x^3, I_x(a, 1) = x^a,
	// I_x(1, b) = 1 - (1-x)^b; and I_x(a, b) + I_{1-x}(b, a) = 1.
	cases := []struct {
		a, b float64
		f    func(x float64) float64
	}{
		{1, 1, func(x float64) float64 { return x }},
		{2, 2, func(x float64) float64 { return 3*x*x - 2*x*x*x }},
		{3.5, 1, func(x float64) float64 { return math.Pow(x, 3.5) }},
		{1, 5.5, func(x float64) float64 { return 1 - math.Pow(1-x, 5.5) }},
	}
	for _, c := range cases {
		lb := lbeta(c.a, c.b)
		for _, x := range []float64{1e-6, 0.01, 0.2, 0.5, 0.7, 0.99, 1 - 1e-6} {
			if got, want := betaInc(c.a, c.b, x, lb), c.f(x); math.Abs(got-want) > 1e-12 {
				t.Errorf("I_%v(%v, %v) = %v, want %v", x, c.a, c.b, got, want)
			}
		}
	}
	lb := lbeta(3, 5.5)
	for _, x := range []float64{0.01, 0.3, 0.6, 0.95} {
		if s := betaInc(3, 5.5, x, lb) + betaInc(5.5, 3, 1-x, lb); math.Abs(s-1) > 1e-13 {
			t.Errorf("I_%v(3, 5.5) + I_%v(5.5, 3) = %v, want 1", x, 1-x, s)
		}
	}
}

// TestFamilyQuantile checks each profile's map from the latent z to Y
// against the family's CDF: P(Y <= y(z)) = Phi(z), compared in the tail
// where it is small.
func TestFamilyQuantile(t *testing.T) {
	for _, p := range Profiles {
		sc := newScorer(p)
		for z := -8.0; z <= 8; z += 0.25 {
			y := sc.y(z)
			var lower, upper float64 // P(Y <= y), P(Y > y)
			switch p.Family {
			case Lognormal:
				lower, upper = phi(math.Log(y)/p.A), phi(-math.Log(y)/p.A)
			case Logistic:
				lower, upper = 1/(1+math.Exp(-y)), 1/(1+math.Exp(y))
			case Weibull:
				upper = math.Exp(-math.Pow(y, p.A))
				lower = -math.Expm1(-math.Pow(y, p.A))
			case Beta:
				lower, upper = betaInc(p.A, p.B, y, sc.lbeta), betaInc(p.B, p.A, 1-y, sc.lbeta)
			}
			got, want := lower, phi(z)
			if z > 0 {
				got, want = upper, phi(-z)
			}
			if math.Abs(got-want) > 1e-9*want {
				t.Errorf("%s: z = %v: y = %v has tail %v, want %v", p.Name, z, y, got, want)
			}
		}
	}
}

// TestProfileMoments integrates each profile's score over z ~ N(0, 1): the
// mean is Mean and the standard deviation SD.
func TestProfileMoments(t *testing.T) {
	for _, p := range Profiles {
		sc := newScorer(p)
		const n, lim = 8000, 10.0
		h := 2 * lim / n
		var m1, m2 float64
		for i := 0; i <= n; i++ {
			z := -lim + float64(i)*h
			w := 2.0 + 2*float64(i%2) // Simpson: 1 4 2 4 ... 4 1
			if i == 0 || i == n {
				w = 1
			}
			w *= h / 3 * math.Exp(-z*z/2) / math.Sqrt(2*math.Pi)
			s := sc.score(z)
			m1 += w * s
			m2 += w * s * s
		}
		sd := math.Sqrt(m2 - m1*m1)
		if math.Abs(m1-p.Mean) > 1e-6 || math.Abs(sd-p.SD) > 1e-6 {
			t.Errorf("%s: mean %v, sd %v; want %v, %v", p.Name, m1, sd, p.Mean, p.SD)
		}
	}
}

func TestLatentRho(t *testing.T) {
	const k, n = 2048, 65536
	tq := math.Sqrt2 * math.Erfcinv(2*float64(k)/n)
	if a := latentOverlap(0, tq); math.Abs(a-float64(k)/n) > 1e-6 {
		t.Errorf("overlap at rho 0 = %v, want k/n = %v", a, float64(k)/n)
	}
	if r := LatentRho(float64(k)/n, k, n); math.Abs(r) > 1e-4 {
		t.Errorf("LatentRho(k/n) = %v, want 0", r)
	}
	prev := -1.0
	for _, a := range []float64{0.005, 0.015, 0.1, 0.44, 0.6, 0.9} {
		r := LatentRho(a, k, n)
		if r <= prev {
			t.Errorf("LatentRho(%v) = %v, not above %v", a, r, prev)
		}
		if got := latentOverlap(r, tq); math.Abs(got-a) > 1e-6 {
			t.Errorf("overlap at LatentRho(%v) = %v", a, got)
		}
		prev = r
	}
	if r := LatentRho(0.5, k, k); r != 0 {
		t.Errorf("LatentRho with k = n is %v, want 0", r)
	}
}

func TestOverlap(t *testing.T) {
	cases := []struct {
		prev, cur []int32
		want      float64
	}{
		{[]int32{1, 2, 3, 4}, []int32{4, 3, 2, 1}, 1},
		{[]int32{1, 2, 3, 4}, []int32{3, 4, 5, 6}, 0.5},
		{[]int32{1, 2}, []int32{3, 4, 5, -1}, 0},
		{[]int32{1, 2, -1, -1}, []int32{2, 7, -1, -1}, 0.5},
		{nil, []int32{-1}, 0},
	}
	for _, c := range cases {
		if got := Overlap(c.prev, c.cur); got != c.want {
			t.Errorf("Overlap(%v, %v) = %v, want %v", c.prev, c.cur, got, c.want)
		}
	}
}

func TestTrajectoryGrows(t *testing.T) {
	for _, nextN := range []int{0, 1, 128} {
		tr := NewTrajectory(Layer1, 64, 1000, nextN, 7)
		var prevTop []int32
		for s := range 4 {
			if tr.Len() != 1000+s*nextN {
				t.Fatalf("nextN %d step %d: Len %d", nextN, s, tr.Len())
			}
			row, pred := tr.Next()
			if len(row) != 1000+s*nextN {
				t.Fatalf("nextN %d step %d: row of %d", nextN, s, len(row))
			}
			if !slices.Equal(pred, prevTop) {
				t.Errorf("nextN %d step %d: the prediction is not the previous step's Top-K", nextN, s)
			}
			prevTop, _ = Reference(row, 64, false)
		}
		if len(tr.Alphas()) != 3 {
			t.Errorf("nextN %d: %d overlaps measured over 4 steps, want 3", nextN, len(tr.Alphas()))
		}
	}
}

func TestTrajectoryReproducible(t *testing.T) {
	rows := func(seed uint64) [][]float32 {
		tr := NewTrajectory(Middle, 256, 10000, 3, seed)
		var out [][]float32
		for range 3 {
			r, _ := tr.Next()
			out = append(out, r)
		}
		return out
	}
	a, b := rows(1), rows(1)
	old := runtime.GOMAXPROCS(1)
	c := rows(1)
	runtime.GOMAXPROCS(old)
	d := rows(2)
	for s := range a {
		if !slices.Equal(a[s], b[s]) || !slices.Equal(a[s], c[s]) {
			t.Errorf("step %d: the same seed gives different rows", s)
		}
		if slices.Equal(a[s], d[s]) {
			t.Errorf("step %d: seeds 1 and 2 give the same row", s)
		}
	}
}

// TestTrajectoryAlpha measures each profile's overlap at the paper's K and
// an N near its 70,690, and its marginal mean and spread.
func TestTrajectoryAlpha(t *testing.T) {
	const k, n, steps = 2048, 65536, 8
	for i, p := range Profiles {
		for _, nextN := range []int{1, 128} {
			tr := NewTrajectory(p, k, n, nextN, uint64(100+i))
			var mean, sd float64
			for s := range steps {
				row, _ := tr.Next()
				if s == 0 {
					mean, sd = meanSD(row)
				}
			}
			alpha := tr.Alpha()
			t.Logf("%-8s %-9v nextN %3d: rho %+.4f, alpha %.4f (target %.3f, min %.4f, max %.4f); step 0 mean %.4f (%.2f), sd %.4f (%.2f)",
				p.Name, p.Family, nextN, tr.Rho(), alpha, p.Alpha, slices.Min(tr.Alphas()), slices.Max(tr.Alphas()), mean, p.Mean, sd, p.SD)
			if math.Abs(alpha-p.Alpha) > 0.02 {
				t.Errorf("%s nextN %d: measured alpha %.4f, target %.3f", p.Name, nextN, alpha, p.Alpha)
			}
			if math.Abs(mean-p.Mean) > 0.02*p.SD || math.Abs(sd-p.SD) > 0.03*p.SD {
				t.Errorf("%s: row mean %.4f, sd %.4f; want %.2f, %.2f", p.Name, mean, sd, p.Mean, p.SD)
			}
		}
	}
}

// TestProfileRange: layer 0's rows span about the paper's 17.28 at N =
// 70,690.
func TestProfileRange(t *testing.T) {
	row, _ := NewTrajectory(Layer0, 2048, 70690, 1, 3).Next()
	r := float64(slices.Max(row) - slices.Min(row))
	t.Logf("layer0: range %.2f (paper 17.28), min %.2f, max %.2f", r, slices.Min(row), slices.Max(row))
	if math.Abs(r-17.28) > 2 {
		t.Errorf("layer0: range %.2f, paper 17.28", r)
	}
}

// TestRandomBaseline: K random indices overlap the Top-K by about K/N (the
// paper's random preIdx, 2.9% at N = 70,690).
func TestRandomBaseline(t *testing.T) {
	const k, n, steps = 2048, 65536, 8
	tr := NewTrajectory(Middle, k, n, 0, 5)
	rng := rand.New(rand.NewPCG(5, 1))
	sum := 0.0
	for range steps {
		row, _ := tr.Next()
		top, _ := Reference(row, k, false)
		guess := make([]int32, k)
		for i, j := range rng.Perm(n)[:k] {
			guess[i] = int32(j)
		}
		sum += Overlap(guess, top)
	}
	got := sum / steps
	t.Logf("random prediction: alpha %.4f, K/N = %.4f", got, float64(k)/n)
	if math.Abs(got-float64(k)/n) > 0.006 {
		t.Errorf("random prediction overlaps by %.4f, want about K/N = %.4f", got, float64(k)/n)
	}
}

func meanSD(x []float32) (m, sd float64) {
	for _, v := range x {
		m += float64(v)
	}
	m /= float64(len(x))
	for _, v := range x {
		d := float64(v) - m
		sd += d * d
	}
	return m, math.Sqrt(sd / float64(len(x)))
}
