package gen

// GroupCandSlots is where a row's candidate slots lie in its workspace
// (Config.Groups), for the tests that check a launch leaves them empty.
func GroupCandSlots(cfg Config) (off, bytes int) {
	w := groupLayout(cfg)
	return w.cands, 8 * cfg.MaxCandidates
}

// SetEarlyMaxShare sets the longest part of a shared row a CTA collects
// early (earlyCollect) for the kernels generated until restore is called.
func SetEarlyMaxShare(n int) (restore func()) {
	old := earlyMaxShare
	earlyMaxShare = n
	return func() { earlyMaxShare = old }
}
