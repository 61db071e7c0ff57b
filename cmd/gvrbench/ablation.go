//go:build cuda

package main

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/gvr-go/gvr/ptx"
	"github.com/gvr-go/gvr/runtime"
	"github.com/gvr-go/gvr/topk"
)

// The paper's ablation (GVR paper, real DeepSeek-V3.2 decoding, N ~ 70690,
// B200): the same kernel with no prediction, a random one, and the
// previous step's Top-K at high and low correlation, on our kernels and
// calibrated trajectories instead of captured logits. Each step's row is
// timed cold with each prediction, and run instrumented for its phases.

// ablationModes are the predictions, with the profile whose trajectory
// they run on and the paper's figure (us, B200; 0: not in the paper).
var ablationModes = []struct {
	name, profile string
	paperUS       float64
}{
	{"none (fallback)", "middle", 43.7},
	{"random", "middle", 30.9},
	{"static prior", "middle", 0},
	{"previous, low alpha", "layer0", 27.2},
	{"previous, high alpha", "middle", 22.7},
}

// ablation runs every prediction mode through gvr_topk and through the
// GVR kernel of the shape a Selector picks for one row of this length
// (where its tuning runs the fallback on predicted rows, the GVR kernel of
// the fallback's shape: the ablation measures the prediction).
func (b *bencher) ablation() error {
	k := b.o.k
	info := b.dev.Info()
	_, c, keep, sure, _ := topk.Choice(info, 1, b.o.replayN+b.o.steps, true) // rows this short are not shared
	choice := "gvr_topk"
	if c > 0 {
		choice = "gvr_topk_cluster"
	}
	type kernel struct {
		name       string
		cluster    int
		keep, sure bool
	}
	kernels := []kernel{{"gvr_topk", 0, false, false}}
	if choice != "gvr_topk" || sure {
		kernels = append(kernels, kernel{choice, c, keep, sure})
	}
	stride := b.o.replayN + b.o.steps
	scores, err := b.dev.Alloc(4 * stride)
	if err != nil {
		return err
	}
	defer scores.Free()
	bufs := map[string]*runtime.Buffer{}
	for _, name := range []string{"lengths", "pred", "out", "stats"} {
		size := 4 * k
		if name == "lengths" {
			size = 4
		} else if name == "stats" {
			size = topk.StatsBytes
		}
		if bufs[name], err = b.dev.Alloc(size); err != nil {
			return err
		}
		defer bufs[name].Free()
	}
	mhz := float64(info.ClockKHz) / 1000
	rng := rand.New(rand.NewPCG(b.o.seed, 77))
	profiles := map[string][][]float32{} // the steps' rows, per profile
	for _, m := range ablationModes {
		if profiles[m.profile] != nil {
			continue
		}
		p, err := profileByName(m.profile)
		if err != nil {
			return err
		}
		tr := topk.NewTrajectory(p, k, b.o.replayN, 1, b.o.seed)
		for range b.o.steps {
			x, _ := tr.Next()
			profiles[m.profile] = append(profiles[m.profile], x)
		}
	}
	for _, kern := range kernels {
		for _, m := range ablationModes {
			name := kern.name
			if m.name == "none (fallback)" {
				name = map[string]string{"gvr_topk": "topk_fallback", "gvr_topk_cluster": "topk_fallback_cluster"}[kern.name]
			}
			a := Ablation{Prediction: m.name, Profile: m.profile, PaperUS: m.paperUS, Kernel: name, Cluster: kern.cluster}
			cfg := topk.ChoiceConfig(b.config(), kern.cluster, kern.keep, kern.sure, 0) // the Selector's
			kk, err := b.clusterKernel(name, cfg)
			if err != nil {
				return err
			}
			cfg.Instrument = true
			ik, err := b.clusterKernel(name, cfg)
			if err != nil {
				return err
			}
			rows := profiles[m.profile]
			var times, alphas []float64
			var passes, cands []float64
			var phases [4]float64
			var prevTop []int32
			for s, x := range rows {
				want, _ := topk.Reference(x, k, b.o.sorted)
				var pred []int32
				switch m.name {
				case "random":
					pred = make([]int32, k)
					for j := range pred {
						pred[j] = int32(rng.IntN(len(x)))
					}
				case "static prior":
					pred = topk.Synthetic{N: len(x), K: k}.Prediction()
				case "previous, low alpha", "previous, high alpha":
					pred = prevTop
				}
				prevTop = want
				if s == 0 {
					continue // the previous-step modes have no prediction yet
				}
				if pred != nil {
					alphas = append(alphas, topk.Overlap(pred, want))
				}
				err := errors.Join(runtime.Upload(scores, x), runtime.Upload(bufs["lengths"], []int32{int32(len(x))}))
				if pred != nil {
					full := make([]int32, k)
					copy(full, pred)
					for j := len(pred); j < k; j++ {
						full[j] = -1
					}
					err = errors.Join(err, runtime.Upload(bufs["pred"], full))
				}
				if err != nil {
					return err
				}
				set := func(kn *runtime.Kernel, stats bool) *ptx.Args {
					args := kn.Args().Set("scores", scores.Ptr()).Set("row_stride", uint64(stride)).
						Set("lengths", bufs["lengths"].Ptr()).Set("out_idx", bufs["out"].Ptr()).Set("out_vals", 0).Set("next_n", 0).Set("row_starts", 0).Set("abs_idx", 0).Set("out_count", 0).Set("page_table", 0).Set("page_table_stride", 0).Set("page_size", 0).Set("out_pages", 0)
					if args.Launch().Param("pred") != nil {
						args.Set("pred", bufs["pred"].Ptr()).Set("pred_stride", uint64(k)).Set("pred_count", uint64(k))
					}
					if stats {
						args.Set("stats", bufs["stats"].Ptr())
					}
					return args
				}
				el, err := b.once(kk, 1, set(kk, false), true, uint32(s))
				if err != nil {
					return fmt.Errorf("ablation %s, %s: %w", name, m.name, err)
				}
				times = append(times, float64(el.Nanoseconds())/1e3)
				idx := make([]int32, k)
				if err := runtime.Download(idx, bufs["out"]); err != nil {
					return err
				}
				if err := topk.Compare(idx, want, b.o.sorted); err != nil {
					b.rep.Mismatches = append(b.rep.Mismatches, fmt.Sprintf("ablation %s, %s, step %d: %v", name, m.name, s, err))
				}
				if _, err := b.once(ik, 1, set(ik, true), true, uint32(s)); err != nil {
					return err
				}
				raw := make([]byte, topk.StatsBytes)
				if err := runtime.Download(raw, bufs["stats"]); err != nil {
					return err
				}
				recs, err := topk.ParseStats(raw)
				if err != nil {
					return err
				}
				for i, cy := range recs[0].PhaseCycles() {
					phases[i] += float64(cy) / mhz
				}
				passes = append(passes, float64(recs[0].Phase2Passes))
				cands = append(cands, float64(recs[0].Candidates))
			}
			n := float64(len(times))
			slices.Sort(times)
			a.MedianUS = times[len(times)/2]
			a.Alpha = mean(alphas)
			a.Passes, a.Candidates = mean(passes), mean(cands)
			for i := range phases {
				a.PhaseUS[i] = phases[i] / n
			}
			b.rep.Ablations = append(b.rep.Ablations, a)
		}
	}
	return nil
}
