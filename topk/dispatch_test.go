package topk

import "testing"

func TestChoose(t *testing.T) {
	for _, c := range []struct {
		s    step
		want string
	}{
		{step{rows: 1, stride: 65536, predicted: true}, kernelGVR},
		{step{rows: 64, stride: 8192, predicted: true}, kernelGVR},
		{step{rows: 1, stride: 65536}, kernelFallback},
		{step{rows: 4096, stride: 1 << 20}, kernelFallback},
	} {
		if got := choose(c.s); got != c.want {
			t.Errorf("choose(%+v) = %s, want %s", c.s, got, c.want)
		}
	}
}
